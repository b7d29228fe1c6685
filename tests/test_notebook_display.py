"""display.setup() quiets only known third-party warnings: the kit's own FutureWarning/DeprecationWarning stay."""

from __future__ import annotations

import warnings

from routebr_kit.notebook.display import setup


def test_setup_keeps_warnings_of_other_modules_visible() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.resetwarnings()
        setup()
        warnings.simplefilter("default")  # what an unconfigured session shows (setup's filters come first)
        setup()
        warnings.warn_explicit("kit deprecation", DeprecationWarning, "routebr_kit/x.py", 1, module="routebr_kit.x")
        warnings.warn_explicit("kit future", FutureWarning, "routebr_kit/x.py", 1, module="routebr_kit.x")
        warnings.warn_explicit("seaborn noise", FutureWarning, "seaborn/x.py", 1, module="seaborn.categorical")
    messages = [str(w.message) for w in caught]
    assert "kit deprecation" in messages and "kit future" in messages
    assert "seaborn noise" not in messages
