"""The conclusion renderer: placeholders, formats, boolean alternatives, and refusals of missing/unused facts."""

from __future__ import annotations

import numpy as np
import pytest

from routebr_kit.notebook.display import ConclusionError, render_conclusion


def test_fills_names_and_formats() -> None:
    assert render_conclusion("{n} rows, {rate:.1%} held", {"n": 12, "rate": 0.25}) == "12 rows, 25.0% held"


def test_alternatives_choose_by_flag_and_may_hold_placeholders() -> None:
    template = "Accuracy {?better|rose by {gain:.1f} points|did not rise} ({n} cases)."
    assert render_conclusion(template, {"better": True, "gain": 2.345, "n": 3}) == \
        "Accuracy rose by 2.3 points (3 cases)."
    assert render_conclusion(template, {"better": np.bool_(False), "gain": 0.0, "n": 3}) == \
        "Accuracy did not rise (3 cases)."


def test_alternative_without_false_branch_and_nested_choice() -> None:
    assert render_conclusion("a{?x| b}", {"x": False}) == "a"
    t = "{?x|{?y|both|x only}|{?y|y only|none}}"
    assert [render_conclusion(t, {"x": x, "y": y}) for x in (True, False) for y in (True, False)] == \
        ["both", "x only", "y only", "none"]


def test_literal_braces() -> None:
    assert render_conclusion("{{ {a} }}", {"a": 1}) == "{ 1 }"


def test_refuses_missing_and_unused_facts() -> None:
    with pytest.raises(ConclusionError, match=r"not computed: \['b'\]"):
        render_conclusion("{a} {b}", {"a": 1})
    with pytest.raises(ConclusionError, match=r"never used: \['c'\]"):
        render_conclusion("{a}", {"a": 1, "c": 2})


def test_refuses_choice_on_non_boolean_and_bad_syntax() -> None:
    with pytest.raises(ConclusionError, match="boolean"):
        render_conclusion("{?n|some|none}", {"n": 3})
    for bad in ("{a", "{?a|x", "a }", "{?a}"):
        with pytest.raises(ConclusionError):
            render_conclusion(bad, {"a": True})


def test_cell_magic_renders_markdown_from_the_named_dict() -> None:
    pytest.importorskip("IPython")
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    try:
        _run_magic(shell)
    finally:
        InteractiveShell.clear_instance()  # other tests expect no IPython session


def _run_magic(shell) -> None:  # noqa: ANN001
    shell.run_line_magic("load_ext", "routebr_kit.notebook")
    shown = []
    shell.display_pub.publish = lambda data, **kw: shown.append(data)
    shell.user_ns["facts"] = {"n": 2, "ok": True}
    shell.run_cell_magic("conclusion", "facts", "**{n}** checks {?ok|pass|fail}")
    assert shown[-1]["text/markdown"] == "**2** checks pass"
    shell.user_ns["facts"] = {"n": 2}
    with pytest.raises(ConclusionError, match="not computed"):
        shell.run_cell_magic("conclusion", "facts", "{n} {ok}")


def _template(notebook: str) -> str:
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "notebooks" / f"{notebook}.ipynb"
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    source = next("".join(c["source"]) for c in cells if "".join(c["source"]).startswith("%%conclusion facts\n"))
    return source.split("\n", 1)[1]


@pytest.mark.parametrize("separated", [True, False])
def test_quickstart_template_says_whether_the_state_separated_the_requests(separated) -> None:
    facts = {"permitted_terminal": "DISPATCH", "forbidden_terminal": "REJECT" if separated else "DISPATCH",
             "state_separated": separated, "forbidden_rule": "R060", "forbidden_priority": 60,
             "forbidden_condition": "action_permission = false → REJECT", "lower_candidates": [], "has_lower": False,
             "committed_action": "A5_PROTECTED_ACTION", "closed_terminal": "CLARIFY", "closed_reason": "x",
             "closed_calls": 2, "closed_errors": "E", "closed_dispatched": False}
    text = render_conclusion(_template("00_quickstart"), facts)
    assert ("runtime state alone" in text) is separated and ("does not hold" in text) is not separated
    assert "a bounded terminal, not a dispatch" in text
