"""docs/screenshots from real runs: a safe and an unsafe scenario's report, and the interactive
timeline after a drag and a hover, as Debian's Chromium shows them (`python -m
bench.screenshots`)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from playwright.sync_api import Page, sync_playwright

from harness.apt import apt_install
from harness.engine import ensure_engine
from kchaos.catalog import catalog, load
from kchaos.overrides import override
from runloop.check import run_and_check

OUT = Path(__file__).resolve().parents[1] / "docs" / "screenshots"
ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
RUNS = {"report-safe.png": "acks-all-leader-kill", "report-unsafe.png": "acks1-leader-kill"}


def _interactive(page: Page, path: Path) -> None:
    """The interactive timeline zoomed to its middle third, hovering a send."""
    page.locator("#interactive").scroll_into_view_if_needed()
    box = page.locator("#latency-chart .u-over").bounding_box()
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + box["width"] / 3, y)
    page.mouse.down()
    page.mouse.move(box["x"] + 2 * box["width"] / 3, y)
    page.mouse.up()
    page.mouse.move(box["x"] + box["width"] / 2, y)
    page.locator("#interactive").screenshot(path=str(path))


def main() -> None:
    ensure_engine()
    if not shutil.which("chromium"):
        apt_install("chromium")
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=ARGS)
        page = browser.new_page(viewport={"width": 1200, "height": 1000})
        for png, name in RUNS.items():
            (scenario,) = override(load(catalog()[name]), None, None, "40s")
            out = run_and_check(scenario, Path(tmp))
            page.goto((out.run_dir / "report.html").as_uri())
            page.screenshot(path=str(OUT / png))
            if png == "report-unsafe.png":
                _interactive(page, OUT / "report-interactive.png")
            print(f"{OUT / png}: {out.result.badge}", flush=True)
        browser.close()


if __name__ == "__main__":
    main()
