"""The ``routebr-kit`` command line (:mod:`routebr_kit.cli.main`); one module per subcommand."""

from .main import COMMANDS, build_parser, main

__all__ = ["COMMANDS", "build_parser", "main"]
