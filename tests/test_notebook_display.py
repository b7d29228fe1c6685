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


def test_one_line_rows_keeps_each_row_of_a_wide_table_on_one_line() -> None:
    """Notebook 10's grouped changed rows: JupyterLab wraps a squeezed ``cases`` cell at every space (rows several
    lines tall, issue 30); the helper's table carries a ``nowrap`` rule scoped to itself and every row of the frame."""
    import pandas as pd

    from routebr_kit.notebook.display import one_line_rows

    frame = pd.DataFrame({"task": ["confirm/routebr/main", "select/x/main"],
                          "cases": ["MAIN-0242 MAIN-0245 MAIN-0246 +12 more", "MAIN-0248 +1 more"]})
    html = one_line_rows(frame).data
    assert ".routebr-one-line td, .routebr-one-line th {white-space: nowrap;}" in html
    assert html.startswith('<div class="routebr-one-line">') and html.endswith("</div>")
    assert all(case in html for case in frame["cases"]) and html.count("</tr>") == 1 + len(frame)


def test_one_line_rows_keeps_the_frames_plain_text_form() -> None:
    import pandas as pd

    from routebr_kit.notebook.display import one_line_rows

    frame = pd.DataFrame({"cases": ["MAIN-0242 MAIN-0245 +12 more"]})
    bundle = one_line_rows(frame)._repr_mimebundle_()
    assert bundle["text/plain"] == repr(frame) and "routebr-one-line" in bundle["text/html"]
