"""One module per ``routebr-kit`` subcommand (discovered by :mod:`routebr_kit.cli`)."""
