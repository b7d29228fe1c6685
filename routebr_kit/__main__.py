"""``python -m routebr_kit`` — the same command line as ``routebr-kit``.

A Ctrl-C while the command line's modules import (before :func:`routebr_kit.cli.app.main` takes over) is exit 130
with one line too; only the interpreter's own start-up, before this file runs, can still end by the signal.
"""

import sys

try:
    from .cli import main
except KeyboardInterrupt:
    print("routebr-kit: interrupted while starting; nothing ran", file=sys.stderr)
    sys.exit(130)

sys.exit(main())
