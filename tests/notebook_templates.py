"""The ``%%conclusion`` templates of the notebooks, read from their sources and rendered without running them.

:func:`template` is the Markdown template of a notebook's ``%%conclusion <variable>`` cell; :func:`render` fills it
with stand-in facts (a number for every placeholder, a chosen truth value for every ``{?flag|…}``), so a test can
check the words each branch says — the numbers themselves are checked against the tables on real runs
(``test_notebook_conclusions``)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from routebr_kit.notebook.display import _names, _parse, render_conclusion

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
NUMBER = re.compile(r"(?<![\w.-])\d+(?:\.\d+)?(?:e-?\d+)?%?")


def template(notebook: str, variable: str = "facts") -> str:
    nb = json.loads((NOTEBOOKS / f"{notebook}.ipynb").read_text(encoding="utf-8"))
    source = next("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"
                  and "".join(c["source"]).startswith(f"%%conclusion {variable}\n"))
    return source.split("\n", 1)[1].rstrip("\n")


def flags(text: str) -> set[str]:
    """The facts the template chooses by (``{?flag|…}``)."""
    return set(re.findall(r"\{\?\s*([\w]+)\s*\|", text))


def render(text: str, chosen: dict[str, bool] | None = None, *, default: bool = True) -> str:
    """``text`` filled with 7 for every fact it states (0.07 where a format spec asks for a float) and ``chosen``
    (else ``default``) for every flag."""
    names = _names(_parse(text, 0, "")[0])
    choice = flags(text)
    specs = dict(re.findall(r"\{(\w+):([^}]*)\}", text))
    facts = {n: (chosen or {}).get(n, default) if n in choice else 0.07 if n in specs else 7 for n in names}
    return render_conclusion(text, facts)


def typed_numbers(text: str) -> list[str]:
    """Numbers a template types itself outside code spans (every number must be a placeholder)."""
    literal = re.sub(r"\{[\w]+(?::[^}]*)?\}", "", text)
    return [n for n in NUMBER.findall(re.sub(r"`[^`]*`", "", literal)) if n not in {"5%", "95%"}]
