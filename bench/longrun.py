"""`BENCH=longrun`: one long `kchaos run` beside a 2-minute run of the same scenario and seed: the harness's memory
(first sample, peak, least-squares slope per hour), the history's size on disk and how long `kchaos analyze` takes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import measure
from contracts.versions import DEFAULT_VERSION

LONG = os.environ.get("BENCH_LONG", "60m")
BASELINE = "2m"
SCENARIO = os.environ.get("BENCH_LONG_SCENARIO", "acks-all-leader-kill")
FLAT_MIB_PER_H = 10.0  # a slope under this, over an hour, is flat: noise, not growth


def one(duration: str) -> tuple[str, dict]:
    """One fresh `kchaos run` for `duration`: its table row, and its memory metrics."""
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMP")) as tmp:
        t0 = time.monotonic()
        subprocess.run([sys.executable, "-m", "kchaos", "run", SCENARIO, "--seed", "0", "--duration", duration,
                        "--runs-dir", tmp], check=True, capture_output=True)
        wall = time.monotonic() - t0
        (run_dir,) = [p.parent for p in Path(tmp).glob("*/*/run.json")]
        result = json.loads((run_dir / "results.json").read_text())
        size = sum(f.stat().st_size for f in (run_dir / "history").rglob("*") if f.is_file())
        analyze_s, analyze_gib, out = measure.run(["kchaos", "analyze", str(run_dir)])
    m, mem = result["metrics"], result["metrics"].get("memory") or {}
    row = (f"| {duration} | {wall:.0f} s | {m['acked']:,} | {mem.get('samples', 0)} | {mem.get('first_mib', '-')} | "
           f"{mem.get('peak_mib', '-')} | {mem.get('slope_mib_per_h', '-')} | {size / 2**20:.0f} MiB | "
           f"{analyze_s:.0f} s / {analyze_gib:.1f} GiB{' ' + out if out.startswith('FAILED') else ''} |")
    return row, mem


def longrun() -> list[str]:
    """The section: the baseline run, then the long one."""
    (base_row, base), (long_row, long) = one(BASELINE), one(LONG)
    slope = long.get("slope_mib_per_h")
    flat = slope is not None and abs(slope) < FLAT_MIB_PER_H
    return ["## A long run: memory, history size and analysis time", "", f"Measured {time.strftime('%Y-%m-%d')}.", "",
            f"Command: `BENCH=longrun BENCH_LONG={LONG} make bench`: `kchaos run {SCENARIO} --seed 0 --duration "
            f"{LONG}` (Kafka {DEFAULT_VERSION}, its scenario's rate), beside the baseline, the same run for "
            f"{BASELINE}. Memory is the harness process and its client processes together, sampled at the "
            "start, each minute and at the end (results' `metrics.memory`); the slope is a least-squares fit over the "
            "workload's samples from its second minute to before the last (taken after the drain). The "
            "analysis is `kchaos analyze` of the run directory in a fresh process (wall time and peak memory of "
            "its process tree).", "",
            "| duration | run wall time | acknowledged | memory samples | first (MiB) | peak (MiB) | slope (MiB/h) "
            "| history on disk | analysis |", "|---|---|---|---|---|---|---|---|---|", base_row, long_row, "",
            f"Peak {long.get('peak_mib', '-')} MiB over {LONG} against {base.get('peak_mib', '-')} MiB over "
            f"{BASELINE}; slope {slope} MiB/h (target flat, |slope| under {FLAT_MIB_PER_H:.0f} MiB/h: "
            f"{'met' if flat else 'NOT met'}).", ""]
