"""`BENCH=longrun`: one long `kchaos run` beside a 2-minute run of the same scenario and seed: the
harness's memory (first sample, peak, least-squares slope per hour), the history's size on disk and
how long `kchaos analyze` takes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from bench import measure
from contracts.versions import DEFAULT_VERSION

LONG = os.environ.get("BENCH_LONG", "60m")
BASELINE = "2m"
# a kill line that keeps pace for hours
SCENARIO = os.environ.get("BENCH_LONG_SCENARIO", "bench/longrun.yaml")
KEPT = Path("bench/out/longrun")  # both runs, replaced by the next measurement
FLAT_MIB_PER_H = 10.0  # a slope under this, over an hour, is flat: noise, not growth


def _watch(args: list[str], log: Path) -> tuple[int, float]:
    """Run `python -m <args>` with its console output in `log`: its exit code, and the peak RSS
    (MiB) of its own process, sampled every 0.5 s from start to exit (the replica dump and the
    compaction after the workload too)."""
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", *args], stdout=out, stderr=subprocess.STDOUT)
        peak = measure.peak_rss(proc, tree=False, every_s=0.5)
    return proc.returncode, peak / 2**20


def one(duration: str) -> tuple[str, dict]:
    """One fresh `kchaos run` for `duration`, kept whatever its verdict under KEPT (history,
    results, console output: a failed verdict is a finding to read): its table row, and its memory
    metrics."""
    runs = KEPT / duration
    shutil.rmtree(runs, ignore_errors=True)
    runs.mkdir(parents=True)
    t0 = time.monotonic()
    code, harness_peak = _watch(["kchaos", "run", SCENARIO, "--seed", "0", "--duration", duration,
                                 "--runs-dir", str(runs)], runs / "console.log")
    wall = time.monotonic() - t0
    results = sorted(runs.glob("*/*/results.json"))
    if not results:
        raise RuntimeError(f"kchaos run --duration {duration} exited {code} without a result: see "
                           f"{runs}/console.log")
    run_dir = results[0].parent
    result = json.loads(results[0].read_text())
    size = sum(f.stat().st_size for f in (run_dir / "history").rglob("*") if f.is_file())
    analyze_s, analyze_gib, out = measure.run(["kchaos", "analyze", str(run_dir)])
    m, mem = result["metrics"], result["metrics"].get("memory") or {}
    row = (f"| {duration} | {result['badge']} (exit {code}) | {wall:.0f} s | {m['acked']:,} | "
           f"{mem.get('samples', 0)} | {mem.get('first_mib', '-')} | {mem.get('peak_mib', '-')} | "
           f"{mem.get('slope_mib_per_h', '-')} | {harness_peak:.0f} | {size / 2**20:.0f} MiB | "
           f"{analyze_s:.0f} s / {analyze_gib:.1f} "
           f"GiB{' ' + out if out.startswith('FAILED') else ''} |")
    return row, mem


def longrun() -> list[str]:
    """The section: the baseline run, then the long one."""
    (base_row, base), (long_row, long) = one(BASELINE), one(LONG)
    slope = long.get("slope_mib_per_h")
    flat = slope is not None and abs(slope) < FLAT_MIB_PER_H
    growth = ", ".join(f"{name} {mib:+.1f}" for name, mib in long.get("growth_mib", {}).items())
    return ["## A long run: memory, history size and analysis time", "",
            f"Measured {time.strftime('%Y-%m-%d')}.", "",
            f"Command: `BENCH=longrun BENCH_LONG={LONG} make bench`: `kchaos run {SCENARIO} --seed "
            f"0 --duration {LONG}` (Kafka {DEFAULT_VERSION}, its scenario's rate), beside the "
            f"baseline, the same run for {BASELINE}. Memory is the harness process and its client "
            "processes together, sampled at the start, each minute and at the end (results' "
            "`metrics.memory`); the slope is a least-squares fit over the workload's samples from "
            "its second minute to before the last (taken after the drain). The analysis is `kchaos "
            "analyze` of the run directory in a fresh process (wall time and peak memory of its "
            "process tree). The harness's own peak is its process's RSS sampled every 0.5 s from "
            "start to exit, the replica dump and compaction after the workload included. Both runs "
            f"are kept in {KEPT}/.", "",
            "| duration | badge | run wall time | acknowledged | memory samples | first (MiB) | "
            "peak (MiB) | slope (MiB/h) | harness's own peak (MiB) | history on disk | analysis |",
            "|---|---|---|---|---|---|---|---|---|---|---|", base_row, long_row, "",
            f"Peak {long.get('peak_mib', '-')} MiB over {LONG} against {base.get('peak_mib', '-')} "
            f"MiB over {BASELINE}; slope {slope} MiB/h (target flat, |slope| under "
            f"{FLAT_MIB_PER_H:.0f} MiB/h: {'met' if flat else 'NOT met'}). Each process's growth "
            f"over those samples in the {LONG} run (MiB): {growth or 'none'}.", ""]
