"""The report in a real browser: headless system Chromium (Playwright, ``executable_path``), networking disabled.

* A simulated run's report opens from disk; filtering to one reason code shows exactly the rows with that reason;
  opening a case shows the stages of its receipt (terminal, reason, winning rule and version, object gate, each call's
  request body and reply); a case text containing ``</script>`` is shown as text and runs nothing.
* A shadow of a loosening rule edit, reported with ``--base`` the published artifact: the changed-case count shown
  equals ``routebr-kit diff --json``; the first row is a new false dispatch; opening it shows both traces side by side
  with the first changed stage highlighted; at 1,280 px the explorer with its diff columns fits its container.
* A 100,000-row synthetic ledger: the time to open the page and to filter it is measured and printed, never asserted.
* A ``reproduce`` output at 1,280 px: every provenance row is under 80 px tall (SHA-256 values shown short, full
  values in the page), headline runs come before near-duplicates and side runs (``guarantee-search/…``), and no
  table of the explorer is wider than its container (the rule column stays in view). ``$ROUTEBR_SCREENS`` names a
  folder for screenshots of the page.

Every request the page makes is recorded: the only one allowed is the report file itself.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from report_fixtures import (
    HOSTILE,
    HOSTILE_CASE,
    REPRODUCE_RUNS,
    loosening_edit,
    reproduce_output,
    simulated_run,
    synthetic_ledger,
)
from test_browser import CHROMIUM_FLAGS, chromium

from routebr_kit.cli.app import main
from routebr_kit.report import build_report, write_html, write_report
from routebr_kit.report.sources import Producer, ReportSource, SourceKind, TaskOrigin

READY = "body[data-ready='1']"


@pytest.fixture(scope="module")
def browser():
    executable = chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_FLAGS)
        try:
            yield b
        finally:
            b.close()


def open_report(browser, path, width=1400):
    """A page with networking disabled (offline context; every request recorded, any non-file request aborted)."""
    context = browser.new_context(offline=True, viewport={"width": width, "height": 1000})
    requests, errors = [], []

    def route(r):
        requests.append(r.request.url)
        if r.request.url.startswith("file://"):
            r.continue_()
        else:
            r.abort()

    context.route("**/*", route)
    page = context.new_page()
    page.on("pageerror", lambda e: errors.append(str(e)))
    t0 = time.perf_counter()
    page.goto(path.resolve().as_uri())
    page.wait_for_selector(READY, timeout=60_000)
    opened = time.perf_counter() - t0
    return context, page, requests, errors, opened


def choose(page, select_id, label_prefix):
    """Pick the option of a filter whose text starts with ``label_prefix`` (its value is a dictionary code)."""
    value = page.evaluate("""([id, prefix]) => {
        const o = Array.from(document.getElementById(id).options).find(o => o.textContent.startsWith(prefix + " ("));
        return o ? o.value : null; }""", [select_id, label_prefix])
    assert value is not None, f"no option {label_prefix} in {select_id}"
    page.select_option(f"#{select_id}", value)


def shown(page, stage, field, side="#rk-detail"):
    return page.locator(f"{side} .rk-row-stages [data-stage={stage}] [data-field={field}]").first.text_content()


def explorer_overflow(page):
    """How far the explorer's table reaches past its container, and the rule column's right edge past it (px)."""
    return page.evaluate("""() => {
        const box = document.querySelector('#rk-explorer .rk-scroll');
        const rule = document.querySelector('#rk-head th[data-key=rule]').getBoundingClientRect();
        return {table: box.scrollWidth - box.clientWidth,
                rule: rule.right - box.getBoundingClientRect().right}; }""")


def screenshots(page, name):
    """Screenshots of the page's top, explorer and provenance into ``$ROUTEBR_SCREENS`` (when set)."""
    folder = os.environ.get("ROUTEBR_SCREENS")
    if not folder:
        return
    Path(folder).mkdir(parents=True, exist_ok=True)
    for section in ("top", "explorer", "provenance"):
        if section != "top":
            page.evaluate(f"document.getElementById('rk-{section}').scrollIntoView()")
        page.screenshot(path=str(Path(folder) / f"{name}_{section}.png"))


def test_filter_to_one_reason_open_a_case_and_see_its_receipt(browser, routebr_artifact, tmp_path):
    run, cases = simulated_run(routebr_artifact, tmp_path, per_split=12)
    path = write_report(run, tmp_path / "report.html", cases=cases).path
    receipts = {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in (run / "raw").glob("*.json")}
    context, page, requests, errors, _ = open_report(browser, path)
    try:
        reasons = sorted({r["summary"]["reason"] for r in receipts.values()})
        reason = "BOUNDARY_TERMINAL" if "BOUNDARY_TERMINAL" in reasons else reasons[0]
        expected = sorted(k for k, r in receipts.items() if r["summary"]["reason"] == reason)
        choose(page, "rk-f-reason", reason)
        assert page.locator("#rk-count").text_content() == f"{len(expected)} of {len(receipts)} rows"
        listed = sorted(page.locator("#rk-body td[data-key=case]").all_text_contents())
        assert listed == expected
        page.locator("#rk-body tr").first.click()
        page.wait_for_selector("#rk-detail .rk-row-stages [data-stage=terminal]")
        case_id = page.locator("#rk-detail h3").text_content().split(" — ")[0]
        receipt = receipts[case_id]
        d = receipt["summary"]["decision"]
        assert shown(page, "terminal", "terminal") == d["terminal"]
        assert shown(page, "terminal", "reason") == d["reason"] == reason
        assert shown(page, "terminal", "final_path") == d["final_path"]
        assert shown(page, "state_gate", "rule_id") == d["rule"]["rule_id"]
        assert shown(page, "state_gate", "rule_version") == d["rule"]["version"]
        assert shown(page, "object_gate", "object_resolution") == d["object_resolution"]
        assert shown(page, "commit", "action_id") == d["proposal"]["action_id"]
        body = json.loads(shown(page, "model_call", "request_body"))
        assert body == receipt["calls"][0]["request_body"]
        assert shown(page, "model_call", "reply") == receipt["responses"][0]["content"]
        order = page.locator("#rk-detail .rk-row-stages [data-stage]").evaluate_all(
            "els => [...new Set(els.map(e => e.dataset.stage))]")
        assert order == ["model_call", "repair", "contract", "commit", "state_gate", "object_gate", "terminal"]
        # the hostile case text: shown as text, nothing ran
        page.fill("#rk-search", HOSTILE_CASE)
        page.wait_for_function("() => document.getElementById('rk-count').textContent.startsWith('1 of')")
        page.locator("#rk-body tr").first.click()
        page.wait_for_selector("#rk-detail .rk-case-stages [data-field=utterance]")
        assert page.locator("#rk-detail .rk-case-stages [data-field=utterance]").text_content() == HOSTILE
        assert page.evaluate("() => window.__pwned") is None
        assert errors == [] and all(u.startswith("file://") for u in requests) and len(requests) == 1
    finally:
        context.close()


def test_with_base_the_changed_count_equals_the_diff(browser, routebr_artifact, tmp_path):
    candidate = loosening_edit(routebr_artifact, tmp_path / "candidate")
    assert main(["shadow", "--artifact", str(routebr_artifact), "--candidate-assets", str(candidate),
                 "--out", str(tmp_path / "shadow")]) == 0
    main(["diff", str(routebr_artifact), str(tmp_path / "shadow"), "--json", str(tmp_path / "diff.json")])
    changed = json.loads((tmp_path / "diff.json").read_text(encoding="utf-8"))["changed"]
    path = write_report(tmp_path / "shadow", tmp_path / "report.html", base=routebr_artifact).path
    context, page, requests, errors, _ = open_report(browser, path)
    try:
        assert int(page.locator("#rk-diff-changed").text_content()) == len(changed) > 0
        page.select_option("#rk-f-change", "changed")
        assert page.locator("#rk-count").text_content() == f"{len(changed)} of 1960 rows"
        first = page.locator("#rk-body tr").first
        assert first.locator("td[data-key=change]").text_content() == changed[0]["change_class"] \
            == "new_false_dispatch"
        assert page.locator("#rk-gate").text_content().startswith("Gate FAILED")
        first.click()
        page.wait_for_selector("#rk-side-base .rk-stage")
        for side in ("#rk-side-base", "#rk-side-candidate"):
            assert page.locator(f"{side} .rk-first-change").first.get_attribute("data-stage") == "state_gate"
        assert shown(page, "state_gate", "rule_id", "#rk-side-base") == changed[0]["base_rule"].split("@")[0]
        assert shown(page, "state_gate", "rule_id", "#rk-side-candidate") == \
            changed[0]["candidate_rule"].split("@")[0]
        # with the diff's three extra columns, the explorer still fits a 1,280 px window (cells wrap at "_", "/")
        page.set_viewport_size({"width": 1280, "height": 1000})
        overflow = explorer_overflow(page)
        assert overflow["table"] <= 0 and overflow["rule"] <= 0, overflow
        assert page.locator("#rk-body td[data-key=change]").first.text_content() == "new_false_dispatch"
        screenshots(page, "report_diff")
        assert errors == [] and len(requests) == 1
    finally:
        context.close()


def test_a_100000_row_ledger_opens_and_filters(browser, routebr_artifact, tmp_path):
    t0 = time.perf_counter()
    ledgers = synthetic_ledger(routebr_artifact, 100_000)
    origin = TaskOrigin(Producer.SHADOW, "synthetic", note="synthetic ledger for the browser timing")
    source = ReportSource(tmp_path, SourceKind.RUNS, ledgers, {k: origin for k in ledgers.tasks})
    data = build_report(source, written_utc="")
    path = write_html(data, tmp_path / "big.html")
    built = time.perf_counter() - t0
    context, page, requests, errors, opened = open_report(browser, path)
    try:
        assert page.locator("#rk-count").text_content() == "100000 of 100000 rows"
        timing = page.evaluate("() => window.__rkReport.timing")
        t1 = time.perf_counter()
        choose(page, "rk-f-reason", "OBJECT_UNRESOLVED")
        page.wait_for_function("() => !document.getElementById('rk-count').textContent.startsWith('100000 of')")
        filtered = time.perf_counter() - t1
        filter_ms = page.evaluate("() => window.__rkReport.timing.lastFilterMs")
        page.locator("#rk-body tr").first.click()
        page.wait_for_selector("#rk-detail .rk-row-stages [data-stage=terminal]")
        print(f"\n100,000-row synthetic report: built and written in {built:.1f} s, "
              f"{path.stat().st_size / 1e6:.1f} MB; browser: page load to ready {opened:.2f} s "
              f"(script {timing['openMs']:.0f} ms), one filter {filtered:.2f} s wall "
              f"({filter_ms:.0f} ms in the script) -> {page.locator('#rk-count').text_content()}")
        assert errors == [] and len(requests) == 1
    finally:
        context.close()


def test_a_reproduce_output_at_1280_px(browser, routebr_artifact, tmp_path):
    run, cases = simulated_run(routebr_artifact, tmp_path / "sim", per_split=12)
    folder = reproduce_output(run, cases, tmp_path / "repro")
    path = write_report(folder, folder / "report.html").path
    context, page, requests, errors, _ = open_report(browser, path, width=1280)
    try:
        provenance = page.locator("#rk-provenance .rk-scroll > table > tbody > tr")
        heights = provenance.evaluate_all("rows => rows.map(r => r.getBoundingClientRect().height)")
        assert len(heights) == 3 and max(heights) < 80, heights
        expected = [f"runs/{r}" for r in REPRODUCE_RUNS]  # headline, near-duplicate, side run
        assert provenance.locator("td:first-child").all_text_contents() == expected
        assert page.locator("#rk-scorecard tbody tr td:first-child").all_text_contents()[::3] == expected
        options = page.evaluate("() => Array.from(document.getElementById('rk-f-task').options).slice(1)"
                                ".map(o => o.textContent.split(' (')[0])")
        assert options == expected
        # a hash is shown short, its full value is in the page (and in the title)
        code = page.locator("#rk-prov code.rk-hash").first
        full = code.text_content()
        assert len(full) == 64 and code.get_attribute("title") == full and code.bounding_box()["width"] < 120
        overflow = explorer_overflow(page)
        assert overflow["table"] <= 0 and overflow["rule"] <= 0, overflow
        # the shared folder is said once; each row shows the rest, its full task in the title
        assert page.locator("#rk-task-prefix").text_content() == "Task paths are relative to runs/."
        first = page.locator("#rk-body td[data-key=task]").first
        assert first.text_content() == REPRODUCE_RUNS[0] and first.get_attribute("title") == expected[0]
        screenshots(page, "report_reproduce")
        assert errors == [] and len(requests) == 1
    finally:
        context.close()
