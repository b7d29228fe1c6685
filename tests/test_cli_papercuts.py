"""The newcomer's papercuts (issue 13, item 7): each error names the file (or option) that is actually wrong."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from routebr_kit.cli import build_parser, main

RUN = ["run", "--profile", "sim:deepseek_v4_primary", "--system", "routebr", "--no-progress"]


@pytest.fixture(scope="module")
def bench(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("bench") / "en-0"
    assert main(["generate", "--seed", "0", "--out", str(out)]) == 0
    return out


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err  # one line, never a traceback
    return err


def test_run_with_a_missing_cases_file_names_the_cases_file(tmp_path, capsys) -> None:
    missing = tmp_path / "MISSING.csv"
    assert main([*RUN, "--cases", str(missing), "--split", "MAIN", "--out", str(tmp_path / "r")]) == 2
    err = _one_line_error(capsys)
    assert f"[FILE_NOT_FOUND] {missing}, field '--cases'" in err and "catalog.csv" not in err
    assert not (tmp_path / "r").exists()


def test_run_names_the_missing_neighbour_and_the_option_that_replaces_it(bench, tmp_path, capsys) -> None:
    lonely = tmp_path / "cases.csv"
    shutil.copy(bench / "routebr_confirm_320.csv", lonely)
    assert main([*RUN, "--cases", str(lonely), "--split", "MAIN", "--out", str(tmp_path / "r")]) == 2
    err = _one_line_error(capsys)
    assert f"[FILE_NOT_FOUND] {tmp_path / 'catalog.csv'}, field '--catalog'" in err
    assert "next to the cases file (or pass --catalog FILE)" in err
    missing_rules = tmp_path / "rules.csv"
    assert main([*RUN, "--cases", str(lonely), "--split", "MAIN", "--out", str(tmp_path / "r"),
                 "--catalog", str(bench / "catalog.csv"), "--rules", str(missing_rules)]) == 2
    assert f"[FILE_NOT_FOUND] {missing_rules}, field '--rules'" in _one_line_error(capsys)


@pytest.mark.parametrize("given, expected", [("main", "MAIN"), ("Flip", "FLIP"), ("entity", "ENTITY"),
                                             ("all", "ALL"), ("MAIN", "MAIN")])
def test_split_accepts_any_letter_case(given, expected) -> None:
    args = build_parser().parse_args([*RUN, "--cases", "x.csv", "--split", given, "--out", "o"])
    assert args.split == expected


def test_split_still_rejects_unknown_names(capsys) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args([*RUN, "--cases", "x.csv", "--split", "train", "--out", "o"])
    assert "invalid choice: 'TRAIN'" in capsys.readouterr().err


def test_run_refusal_names_the_resume_flag_and_resume_continues(bench, tmp_path, capsys) -> None:
    out = tmp_path / "r"
    argv = [*RUN, "--cases", str(bench / "routebr_select_160.csv"), "--split", "entity", "--out", str(out)]
    assert main(argv) == 0
    first = capsys.readouterr().out
    assert "score: exact " in first  # the summary line after a run
    before = (out / "predictions.csv").read_bytes()
    assert main(argv) == 2
    err = _one_line_error(capsys)
    assert f"[INVALID_VALUE] {out}" in err and "(or --resume to continue it)" in err and "resume=True" not in err
    assert (out / "predictions.csv").read_bytes() == before
    assert main([*argv, "--resume"]) == 0
    assert (out / "predictions.csv").read_bytes() == before


def test_run_with_explicit_catalog_still_uses_the_registry_beside_the_cases(bench, tmp_path) -> None:
    out = tmp_path / "r"
    assert main([*RUN, "--cases", str(bench / "routebr_select_160.csv"), "--split", "ENTITY", "--out", str(out),
                 "--catalog", str(bench / "catalog.csv")]) == 0
    hashes = json.loads((out / "run_manifest.json").read_text(encoding="utf-8"))["hashes"]
    assert hashes["registry"] is not None  # before: silently no registry once --catalog was given


@pytest.mark.parametrize("broken", ["cases", "catalog", "rules", "entities"])
def test_audit_names_the_file_that_is_missing(bench, tmp_path, capsys, broken) -> None:
    paths = {"cases": bench / "routebr_600.csv", "catalog": bench / "catalog.csv",
             "rules": bench / "boundary_rules.csv", "entities": bench / "registry.csv"}
    paths[broken] = tmp_path / f"missing-{broken}.csv"
    if broken == "cases":  # even when an asset is missing too, the first path named is reported
        paths["catalog"] = tmp_path / "missing-catalog.csv"
    argv = ["audit", str(paths["cases"]), "--catalog", str(paths["catalog"]), "--rules", str(paths["rules"]),
            "--entities", str(paths["entities"])]
    assert main(argv) == 2
    err = _one_line_error(capsys)
    field = {"cases": "CASES", "catalog": "--catalog", "rules": "--rules", "entities": "--entities"}[broken]
    assert f"[FILE_NOT_FOUND] {paths[broken]}, field '{field}'" in err


def test_every_subcommand_is_listed_with_help(capsys) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--help"])
    listed = capsys.readouterr().out
    for name in ("score", "fetch-artifact", "reproduce", "run", "audit"):
        assert f"    {name}" in listed
