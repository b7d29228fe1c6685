"""The ``routebr-kit`` command line (:mod:`routebr_kit.cli.app`); one module per subcommand."""

from .. import lazy_exports

#: Every public name → the module that defines it, imported on first use.
_EXPORTS: dict[str, str] = {name: module for module, names in {
    "app": "COMMANDS build_parser main",
}.items() for name in names.split()}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
