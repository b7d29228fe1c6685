"""``python -m routebr_kit`` — the same command line as ``routebr-kit``."""

import sys

from .cli import main

sys.exit(main())
