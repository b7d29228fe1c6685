"""The lexical-shift split (issue 33): held-out primary templates, the same plan, states and gold labels; the
generator's audit still holds; the default benchmark is unchanged."""

from __future__ import annotations

import pytest

from routebr_kit.dataset import generate_benchmark, write_benchmark
from routebr_kit.dataset.audit import audit_files
from routebr_kit.dataset.lexical_shift import SHIFT_PRIMARY
from routebr_kit.dataset.templates_en import PACK as EN
from routebr_kit.dataset.templates_zh import PACK as ZH


@pytest.mark.parametrize("language", ["en", "zh"])
def test_same_plan_other_wording_and_the_audit_passes(language, tmp_path):
    default = generate_benchmark(seed=0, language=language)
    shifted = generate_benchmark(seed=0, language=language, lexical_shift=True)
    assert [c.case_id for c in shifted.cases] == [c.case_id for c in default.cases]
    assert all(
        (a.gold.action, a.gold.final_path, a.gold.boundary, a.request.state) ==
        (b.gold.action, b.gold.final_path, b.gold.boundary, b.request.state)
        for a, b in zip(shifted.cases, default.cases))
    assert sum(a.request.utterance != b.request.utterance for a, b in zip(shifted.cases, default.cases)) > 500
    out = tmp_path / "b"
    write_benchmark(shifted, out)
    report = audit_files([out / "routebr_600.csv", out / "routebr_confirm_320.csv", out / "routebr_select_160.csv"],
                         out / "catalog.csv", out / "boundary_rules.csv", out / "registry.csv")
    assert report.ok


def test_the_shift_templates_are_held_out_from_the_default_packs():
    for pack in (EN, ZH):
        default = {t for ts in pack.primary.values() for t in ts}
        shifted = {t for ts in SHIFT_PRIMARY[pack.language].values() for t in ts}
        assert not default & shifted and set(SHIFT_PRIMARY[pack.language]) == set(pack.primary)
