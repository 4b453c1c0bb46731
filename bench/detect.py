"""`make detect`: false-alarm rate of must-pass scenarios and hit rate of known-unsafe ones; writes DETECTION.md.

DETECT_RUNS_PASS (default 20) and DETECT_RUNS_UNSAFE (default 10) set the runs per scenario.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from harness.cli import catalog, override
from harness.engine import ensure_engine
from harness.scenario import load
from reports.pipeline import run_and_check

MUST_PASS = ["acks-all-leader-kill", "idempotent-resets-failovers", "rolling-restart", "controller-failover",
             "zombie-leader-acks-all", "isr-shrink-paused-follower", "consumer-group-rebalance"]
UNSAFE = ["acks1-leader-kill", "zombie-leader-acks1", "non-idempotent-retries", "unclean-election-true",
          "consumer-group-at-most-once"]
OUT = Path(__file__).resolve().parents[1] / "DETECTION.md"


def rows_for(name: str, runs: int, root: Path) -> list[str]:
    rows = []
    for base in load(catalog()[name]):
        violations = hits = unknown = 0
        for seed in range(runs):
            (s,) = override([base], None, seed, None)
            r = run_and_check(s, root).result
            violations += r["verdict"] == "false"
            unknown += r["verdict"] == "unknown"
            hits += bool(s.expect) and not r["missing_expect"]
        rate = f"{hits}/{runs}" if base.expect else "-"
        rows.append(f"| {base.name} | {runs} | {violations} | {unknown} | {', '.join(base.expect) or '-'} | {rate} |")
        print(rows[-1], flush=True)
    return rows


def main() -> None:
    ensure_engine()
    root = Path(os.environ.get("DETECT_RUNS_DIR", "runs/detect"))
    n_pass, n_unsafe = int(os.environ.get("DETECT_RUNS_PASS", "20")), int(os.environ.get("DETECT_RUNS_UNSAFE", "10"))
    started = time.monotonic()
    rows = [r for name in MUST_PASS for r in rows_for(name, n_pass, root)]
    rows += [r for name in UNSAFE for r in rows_for(name, n_unsafe, root)]
    OUT.write_text("\n".join([
        "# Detection power", "",
        f"Command: `make detect` (DETECT_RUNS_PASS={n_pass}, DETECT_RUNS_UNSAFE={n_unsafe}); seeds 0..N-1; "
        f"took {(time.monotonic() - started) / 60:.0f} min.", "",
        "| scenario | runs | violations (false alarms if it must pass) | unknown | expected anomaly | hit rate |",
        "|---|---|---|---|---|---|", *rows, ""]))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
