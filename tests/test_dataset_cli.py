"""``routebr-kit generate`` and ``routebr-kit audit``: files, printed figures, exit codes."""

from __future__ import annotations

from routebr_kit.cli import main


def _assets(d) -> list[str]:
    return ["--catalog", str(d / "catalog.csv"), "--rules", str(d / "boundary_rules.csv"),
            "--entities", str(d / "registry.csv")]


def test_generate_then_audit(tmp_path, capsys) -> None:
    out = tmp_path / "zh-4"
    assert main(["generate", "--seed", "4", "--lang", "zh", "--out", str(out), "--decouple-entity-state"]) == 0
    printed = capsys.readouterr().out
    assert "wrote 7 files" in printed and "MAIN      300     100      200           120      180" in printed
    assert '"decouple_entity_state": true' in (out / "manifest.json").read_text(encoding="utf-8")
    files = [str(out / n) for n in ("routebr_600.csv", "routebr_select_160.csv", "routebr_confirm_320.csv")]
    assert main(["audit", *files, *_assets(out)]) == 0
    printed = capsys.readouterr().out
    assert printed.count("PASSED: 0 errors, 0 warnings") == 3
    assert "ALL       600           262      338" in printed


def test_same_seed_same_manifest_through_the_cli(tmp_path, capsys) -> None:
    for name in ("a", "b"):
        assert main(["generate", "--seed", "2", "--out", str(tmp_path / name)]) == 0
    assert (tmp_path / "a" / "manifest.json").read_bytes() == (tmp_path / "b" / "manifest.json").read_bytes()


def test_audit_of_the_published_file(routebr_artifact, capsys) -> None:
    data = routebr_artifact / "data"
    code = main(["audit", str(data / "routebr_600.csv"), "--catalog", str(data / "catalog.csv"),
                 "--rules", str(data / "boundary_rules.csv"), "--entities", str(data / "entity_catalog.csv")])
    printed = capsys.readouterr().out
    assert code == 0
    assert "sha256 cases    f7911a54" in printed
    assert "WARNING KIT CUE_EVIDENCE_NOT_FOUND MAIN-0003 (line 124)" in printed
    assert "PASSED: 0 errors, 37 warnings (published checks pass)" in printed


def test_audit_exit_codes(tmp_path, capsys) -> None:
    out = tmp_path / "en"
    main(["generate", "--out", str(out)])
    text = (out / "routebr_600.csv").read_text(encoding="utf-8").replace("MAIN-0007,MAIN", "MAIN-0007,TRAIN", 1)
    (out / "bad.csv").write_text(text, encoding="utf-8")
    capsys.readouterr()
    assert main(["audit", str(out / "bad.csv"), *_assets(out)]) == 1
    printed = capsys.readouterr().out
    assert "ERROR PUBLISHED UNKNOWN_SPLIT MAIN-0007" in printed and "FAILED" in printed
    assert main(["audit", str(out / "missing.csv"), *_assets(out)]) == 2
    assert "FILE_NOT_FOUND" in capsys.readouterr().err
