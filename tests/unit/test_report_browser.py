"""report.html and comparison.html as a person sees them: Debian's Chromium (installed on first use)
opens reports of hand-built runs and finds the headline, the badge and the timeline, and a
comparison's table first, fitting the window, with no broken image."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

from contracts.history import Event
from harness.apt import apt_install
from kchaos.catalog import validate
from runloop import check as pipeline
from tests.histories import clean
from tests.unit.test_compare_and_junit import placed, result

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SAFE = {"producer": {"acks": "all", "idempotence": True}, "topic": {"min_insync_replicas": 2}}
UNSAFE = {"producer": {"acks": "1", "idempotence": False}, "topic": {"min_insync_replicas": 1}}


def chromium() -> str:
    """Debian's Chromium, installed on first use (root on Debian)."""
    if not shutil.which("chromium"):
        apt_install("chromium")
    return shutil.which("chromium") or "chromium"


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium(), args=CHROMIUM_ARGS)
        yield b
        b.close()


def report(tmp_path: Path, settings: dict, lose: bool, memory_mib: tuple[int, ...] = (),
           uploads: int = 0) -> Path:
    """A run directory checked by the real pipeline: a clean history (with one kill that fired),
    minus one acked write when `lose`, with the harness's memory sampled ten minutes apart at
    `memory_mib`, and `uploads` segments of partition 0 uploaded to a remote tier."""
    h = clean()
    for base in range(uploads):
        h.event("sampler", Event.REMOTE_UPLOADED, partition=0, offset=base)
    h.fault("kill", [2], planned_at=0.05, hold_s=0.02)
    for i, mib in enumerate(memory_mib):
        h.t += 600 * 10**9 if i else 0
        h.event("harness", Event.MEMORY,
                detail=json.dumps({"harness": mib * 2**19, "clients": mib * 2**19,
                                                             "each": {"producer-0": mib * 2**19}}))
    if lose:
        h.drop("reads", producer=0, seq=0).drop("replicas", producer=0, seq=0)
    run = tmp_path / "run"
    scenario = validate({"name": "shown", **settings}, "test")
    h.write(run / "history")
    (run / "scenario.json").write_text(scenario.model_dump_json(by_alias=True))
    pipeline.check(scenario, run)
    return run / "report.html"


@pytest.mark.parametrize("settings, lose, badge, says", [
    (SAFE, False, "PASS", "All 12 acknowledged writes were read back and no anomaly occurred. 1/1 "
                          "planned fault ops fired."),
    (UNSAFE, True, "EXPECTED ANOMALY", "Lost 1 of 12 acknowledged writes (8.3%) on partition 0 at "
                                       "0.0-0.0 s; allowed. 1/1 planned fault ops fired. "
                                       "(docs)\nlost-write is allowed here: acks=1"),
    (SAFE, True, "FAIL", "Lost 1 of 12 acknowledged writes (8.3%) on partition 0 at 0.0-0.0 s; "
                         "forbidden. 1/1 planned fault ops fired. (docs)\nlost-write is forbidden "
                         "here: acks=all with min.insync.replicas>=2"),
])
def test_the_report_shows_what_happened_at_the_top(
        spark, browser, tmp_path, settings, lose, badge, says):
    page = browser.new_page()
    page.goto(report(tmp_path, settings, lose).as_uri())
    assert page.inner_text("#badge") == badge
    assert (page.inner_text("#headline") + "\n" + page.inner_text("#rule") if lose else
            page.inner_text("#headline")).startswith(says)
    images = page.evaluate("[...document.images].map(i => [i.id, i.complete && i.naturalWidth > "
                           "0])")
    assert ["timeline", True] in images and all(ok for _, ok in images)
    assert (page.locator("#headline").bounding_box()["y"] < page.locator("#timeline")
            .bounding_box()["y"] < 900)
    rows = page.locator("#faults tr").all_inner_texts()
    assert any(r.startswith("kill\tfired") for r in rows), rows
    # YAML
    assert ("idempotence: " in page.inner_text("#settings")
            and "True" not in page.inner_text("#settings"))
    page.close()


def test_the_report_says_the_harness_memory_over_the_run(spark, browser, tmp_path):
    page = browser.new_page()
    # the slope leaves out the start-up sample: three steady samples remain
    page.goto(report(tmp_path, SAFE, False, memory_mib=(100, 130, 120, 125)).as_uri())
    text = page.inner_text("#memory")
    assert ("4 samples" in text and "100.0 MiB at the start, peak 130.0 MiB" in text
            and "MiB per hour" in text), text
    assert text.endswith("harness -2.5 MiB, producer-0 -2.5 MiB."), text
    page.close()


def test_the_report_says_what_the_remote_tier_did(spark, browser, tmp_path):
    page = browser.new_page()
    page.goto(report(tmp_path, SAFE, False, uploads=3).as_uri())
    assert page.inner_text("#remote-tier") == ("Remote tier (sampled each second): 3 segments "
                                               "uploaded, 0 deleted; log start offsets moved 0 "
                                               "times.")
    page.close()


def test_the_report_says_what_a_share_group_was_handed(spark, browser, tmp_path):
    h = clean()
    sent = sorted((r["partition"], r["offset"], r["producer"], r["seq"]) for r in h.rows["sends"])
    h.share_poll("share-0", (*sent[0], 1, "release"))
    h.share_poll("share-1", *((*r, 2 if r == sent[0] else 1, "accept") for r in sent))
    for p in (0, 1):
        h.share_state(p, 6, 0)
    run = tmp_path / "run"
    scenario = validate({"name": "shown", "workload": "share", **SAFE}, "test")
    h.write(run / "history")
    (run / "scenario.json").write_text(scenario.model_dump_json(by_alias=True))
    pipeline.check(scenario, run)
    page = browser.new_page()
    page.goto((run / "report.html").as_uri())
    assert page.inner_text("#share-group") == (
        "Share group: 13 deliveries; 1 of 12 records was delivered more than once: 1 after a "
        "release, 0 after a member died, was cut off or held them past their lock.")
    assert page.inner_text("#headline").endswith("1 record came back: 1 released, 0 after a "
                                                 "member's hold ended.")
    images = page.evaluate("[...document.images].map(i => i.complete && i.naturalWidth > 0)")
    assert images and all(images)
    page.close()


def test_the_comparison_leads_with_its_table_then_says_what_differs(browser, tmp_path):
    # a: 4.3.1 loses 600-680 acknowledged writes, 3.9.2 30,000-32,000 (p = 2/252, q = 4p over four
    # tests); b: alike
    results = [result("a", "4.3.1", "true", s, lost=600 + 20 * s) for s in range(5)]
    results += [result("a", "3.9.2", "true", s, lost=30_000 + 500 * s) for s in range(5)]
    results += [result("b", v, "true", s, lost=s) for v in ("4.3.1", "3.9.2") for s in range(5)]
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.goto(placed(results, tmp_path)[0].as_uri())
    table, said = page.locator("table.grid").first, page.locator("#differs")
    assert table.bounding_box()["y"] < 300 and table.bounding_box()["y"] < said.bounding_box()["y"]
    first = said.locator("p").first.inner_text()
    assert first.startswith("What differs between versions beyond its seeds' spread")
    assert said.locator("ul > li").all_inner_texts() == [
        "a: acknowledged writes lost median 31,000 on Kafka 3.9.2 vs 640 on 4.3.1 (Mann-Whitney U "
        "p=0.00794, q=0.0317)"]
    images = page.evaluate("[...document.images].map(i => i.complete && i.naturalWidth > 0)")
    assert images == [True, True]  # a box plot per scenario, each drawn
    page.close()


def test_a_wide_comparison_fits_a_1400_pixel_window_with_a_column_only_for_what_ran(
        browser, tmp_path):
    # as the columns go
    versions = ["4.4.0", "4.3.1", "3.9.2:zookeeper", "3.9.2", "2.8.2", "2.0.1", "2.0.0"]
    results = [result(f"scenario-with-a-long-name-{i}", v, "true", s, lost=s * i)
               .model_copy(update={
        "allowed": ["lost-write"], "counts": {"lost-write": s * i, "duplicate": s,
                                              "nonmonotonic-send": i}})
        for i in range(8) for v in versions[:5] for s in range(3)]
    # a regression: its own table
    results += [result("k", v, "true", s) for v in versions[5:] for s in range(3)]
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.goto(placed(results, tmp_path)[0].as_uri())
    assert page.evaluate("document.documentElement.scrollWidth") <= 1400
    headers = [t.locator("th").all_inner_texts() for t in page.locator("table.grid").all()]
    assert headers == [["scenario", *(f"Kafka {v}" for v in versions[:5])],
                       ["scenario", "Kafka 2.0.1", "Kafka 2.0.0"]]
    assert page.locator("table.grid").first.bounding_box()["y"] < 900
    assert "not run" not in page.inner_text("body")
    page.close()


def test_the_interactive_timeline_zooms_both_charts_and_says_the_send_under_the_cursor(
        spark, browser, tmp_path):
    path = report(tmp_path, SAFE, False)
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri())
    page.locator("#interactive").scroll_into_view_if_needed()
    box = page.locator("#latency-chart .u-over").bounding_box()
    page.mouse.move(box["x"] + 2, box["y"] + box["height"] / 2)
    assert page.inner_text("#hover").startswith("0.000 s: producer 0 seq 0 → partition 0 offset 0, "
                                                "acknowledged in")
    page.mouse.move(box["x"] + box["width"] * 0.2, box["y"] + 10)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.6, box["y"] + 10)
    page.mouse.up()
    scales = page.evaluate("['throughput', 'latency'].map(c => [kchaosTimeline[c].scales.x.min, "
                           "kchaosTimeline[c].scales.x.max])")
    # the drag zoomed both alike
    assert scales[0] == scales[1] and scales[0][1] - scales[0][0] < 0.5, scales
    assert errors == [] and path.stat().st_size < 1_000_000
    page.close()
