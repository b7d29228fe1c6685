"""The report against hostile folders (issue 31, "a report that is safe to open"): nothing a folder holds becomes a
link out or a script, no byte from outside the folder is embedded, no special file is opened, and a ledger over the
row cap is sampled with the cap stated.  The browser tests open the pages in headless Chromium (networking off)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from pathlib import Path

import pytest
from report_fixtures import simulated_run

from routebr_kit.cli.app import main
from routebr_kit.core.errors import DataError
from routebr_kit.report import sources, write_report
from routebr_kit.report.urls import check_urls, safe_href
from routebr_kit.store.ledger import sample_predictions

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 32
CANARY = b"CANARY-OUTSIDE-THE-FOLDER-31"
HOSTILE_NAMES = ["javascript:window.__pwned=1;'", "javascript:%0Awindow.__pwned=1", "java\nscript:window.__pwned=1",
                 "../../outside", "//evil.example/x", "https://evil.example/x", "data:text/html,<script>1</script>"]


@pytest.fixture(scope="module")
def sim_run(routebr_artifact, tmp_path_factory):
    return simulated_run(routebr_artifact, tmp_path_factory.mktemp("sim"), per_split=6)


@pytest.fixture
def deadline():
    """Fail (not hang) if a command blocks on a special file."""
    def fire(*_):
        raise TimeoutError("blocked on a special file")
    old = signal.signal(signal.SIGALRM, fire)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def reproduce_folder(sim_run, folder: Path, names: list[str]) -> Path:
    run, cases = sim_run
    (folder / "runs").mkdir(parents=True)
    shutil.copytree(run, folder / "runs" / "sim" / "routebr")
    shutil.copytree(cases.parent, folder / "01_dataset_construction" / "benchmark")
    notebooks = [{"name": n, "status": "ok", "seconds": 1.0} for n in names]
    (folder / "manifest.json").write_text(json.dumps({"params_name": "default", "artifact": None,
                                                      "notebooks": notebooks}), encoding="utf-8")
    return folder


def outside_canary(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir(exist_ok=True)
    (outside / "canary.png").write_bytes(PNG + CANARY)
    return outside / "canary.png"


def test_the_allow_list():
    for ok in ("#nb-03_rq1", "03_rq1/03_rq1.ipynb", "a-b_c.d/e"):
        assert safe_href(ok) == ok
    for bad in [*HOSTILE_NAMES, "javascript:x/javascript:x.ipynb", "a/../b", ".hidden", "/etc/passwd", "a\\b",
                "#x y", "", None]:
        assert safe_href(bad) is None, bad
    with pytest.raises(DataError):
        check_urls('<a href="javascript:alert(1)">x</a>')
    with pytest.raises(DataError):
        check_urls('<img src="https://evil.example/x.png">')
    check_urls('<a href="#a">a</a><img src="data:image/png;base64,AAAA">')


def test_hostile_notebook_names_are_text_not_links(sim_run, tmp_path):
    folder = reproduce_folder(sim_run, tmp_path / "repro", HOSTILE_NAMES)
    html = write_report(folder, tmp_path / "r.html").path.read_text(encoding="utf-8")
    assert "javascript:" in html  # shown as text ...
    for name in ("javascript", "java\nscript", "https:", "//evil", "data:text", "../"):
        assert f'href="{name}' not in html  # ... never as a link
    assert "script-src 'sha256-" in html and "script-src 'unsafe-inline'" not in html
    check_urls(html)


def test_a_figure_link_out_of_the_folder_is_refused_and_nothing_of_it_is_embedded(sim_run, tmp_path, capsys):
    run, cases = sim_run
    folder = shutil.copytree(run, tmp_path / "run")
    (folder / "fig.png").symlink_to(outside_canary(tmp_path))
    out = tmp_path / "report.html"
    assert main(["report", str(folder), "--cases", str(cases), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "[UNKNOWN_REFERENCE]" in err and "fig.png" in err, err
    assert not out.exists()


def test_a_captioned_figure_out_of_a_reproduce_folder_is_refused(sim_run, tmp_path, capsys):
    folder = reproduce_folder(sim_run, tmp_path / "repro", ["03_rq1"])
    canary = outside_canary(tmp_path)
    (folder / "03_rq1").mkdir()
    rel = os.path.relpath(canary, folder / "03_rq1")
    (folder / "03_rq1" / "captions.json").write_text(json.dumps([{"kind": "figure", "caption": "c",
                                                                  "files": [rel]}]), encoding="utf-8")
    out = tmp_path / "report.html"
    assert main(["report", str(folder), "--out", str(out)]) == 2
    assert "[UNKNOWN_REFERENCE]" in capsys.readouterr().err and not out.exists()


@pytest.mark.parametrize("kind", ["fifo", "device", "dangling", "outside_fifo"])
def test_a_special_figure_is_one_wrong_type_line(sim_run, tmp_path, capsys, deadline, kind):
    run, cases = sim_run
    folder = shutil.copytree(run, tmp_path / "run")
    fig = folder / "f.png"
    if kind == "fifo":
        os.mkfifo(fig)
    elif kind == "device":
        fig.symlink_to("/dev/zero")
    elif kind == "dangling":
        fig.symlink_to(tmp_path / "nowhere.png")
    else:
        os.mkfifo(tmp_path / "elsewhere.png")
        (folder / "sub").mkdir()
        (folder / "sub" / "f.png").symlink_to(tmp_path / "elsewhere.png")
    t0 = time.perf_counter()
    status = main(["report", str(folder), "--cases", str(cases), "--out", str(tmp_path / "r.html")])
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert ("[WRONG_TYPE]" in err or "[UNKNOWN_REFERENCE]" in err) and "f.png" in err, err
    assert time.perf_counter() - t0 < 30


def test_an_oversized_figure_is_refused(sim_run, tmp_path, capsys, monkeypatch):
    from routebr_kit.report import html

    monkeypatch.setattr(html, "MAX_FIGURE_BYTES", 1000)
    run, cases = sim_run
    folder = shutil.copytree(run, tmp_path / "run")
    (folder / "big.png").write_bytes(PNG + b"\0" * 2000)
    assert main(["report", str(folder), "--cases", str(cases), "--out", str(tmp_path / "r.html")]) == 2
    assert "[LIMIT_EXCEEDED]" in capsys.readouterr().err


def test_a_ledger_over_the_row_cap_is_sampled_and_says_so(sim_run, tmp_path, monkeypatch, capsys):
    run, cases = sim_run
    monkeypatch.setattr(sources, "MAX_ROWS", 5)
    written = write_report(run, tmp_path / "r.html", cases=cases)
    html = written.path.read_text(encoding="utf-8")
    assert 0 < written.rows <= 5 and "SAMPLED" in html and "cap of 5 rows" in html
    assert main(["report", str(run), "--base", str(run), "--cases", str(cases), "--out",
                 str(tmp_path / "d.html")]) == 2
    assert "[LIMIT_EXCEEDED]" in capsys.readouterr().err


def test_sampling_a_large_ledger_streams_it(sim_run, tmp_path):
    """300,000 rows streamed with a 1,000-row cap: every row counted, at most the cap kept (time printed)."""
    run, _ = sim_run
    lines = (run / "predictions.csv").read_text(encoding="utf-8").splitlines(keepends=True)
    header, row = lines[0], lines[1]
    case_id = row.split(",")[0]
    big = tmp_path / "predictions.csv"
    with open(big, "w", encoding="utf-8") as out:
        out.write(header)
        for i in range(300_000):
            out.write(row.replace(case_id, f"X-{i:07d}", 1))
    t0 = time.perf_counter()
    rows, sample = sample_predictions(big, 1000)
    print(f"sampled 300,000 rows in {time.perf_counter() - t0:.1f} s")
    assert sample.total == 300_000 and len(rows) == sample.kept <= 1000 and sample.every == 300
    assert sum(sample.final_paths.values()) == 300_000


# ------------------------------------------------------------------------------------------- in Chromium


def test_hostile_pages_run_nothing_in_chromium(sim_run, tmp_path):
    from test_browser import CHROMIUM_FLAGS, chromium
    from test_report_browser import open_report

    executable = chromium()
    from playwright.sync_api import sync_playwright

    folder = reproduce_folder(sim_run, tmp_path / "repro", HOSTILE_NAMES)
    page_path = write_report(folder, tmp_path / "r.html").path
    html = page_path.read_text(encoding="utf-8")
    # the same page with a javascript: link spliced in, as if one had slipped through: the policy must refuse it
    injected = tmp_path / "injected.html"
    injected.write_text(html.replace("</body>", '<a id="rk-injected" href="javascript:window.__pwned=1">x</a>'
                                     '<img src="x" onerror="window.__pwned=2"></body>'), encoding="utf-8")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_FLAGS)
        try:
            for path in (page_path, injected):
                context, page, requests, errors, _ = open_report(browser, path)
                try:
                    for link in page.locator("#rk-notebooks a").all():
                        link.click()
                    if path == injected:
                        page.locator("#rk-injected").click()
                    page.wait_for_timeout(300)
                    assert page.evaluate("() => window.__pwned") is None
                    hrefs = page.locator("a[href]").evaluate_all("els => els.map(e => e.getAttribute('href'))")
                    assert not any(h.startswith("javascript") for h in hrefs if path == page_path)
                    assert all(u.startswith("file://") for u in requests), requests
                    assert errors == [], errors
                finally:
                    context.close()
        finally:
            browser.close()
    assert CANARY.decode() not in html
