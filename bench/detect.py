"""`make detect`: false-alarm rate of must-pass scenarios and hit rate of known-unsafe ones; writes DETECTION.md.

DETECT_RUNS_PASS (default 20) and DETECT_RUNS_UNSAFE (default 10) set the runs per scenario; DETECT_ONLY=a,b
limits it to some scenarios, whose rows replace theirs in DETECTION.md (the other rows stay).
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


def rows_for(name: str, runs: int, root: Path) -> dict[str, str]:
    """One row per scenario (per matrix combination): its verdicts over seeds 0..runs-1."""
    rows = {}
    for base in load(catalog()[name]):
        violations = hits = unknown = errors = 0
        for seed in range(runs):
            (s,) = override([base], None, seed, None)
            try:
                r = run_and_check(s, root).result
            except Exception as exc:  # noqa: BLE001 - a harness error is a finding of its own, not the end of detect
                errors += 1
                print(f"{s.name} seed {seed}: harness error {type(exc).__name__}: {exc}", flush=True)
                continue
            violations += r["verdict"] == "false"
            unknown += r["verdict"] == "unknown"
            hits += bool(s.expect) and not r["missing_expect"]
        rate = f"{hits}/{runs}" if base.expect else "-"
        rows[base.name] = (f"| {base.name} | {runs} | {violations} | {unknown} | {errors} | "
                           f"{', '.join(base.expect) or '-'} | {rate} | {time.strftime('%Y-%m-%d')} |")
        print(rows[base.name], flush=True)
    return rows


HEADER = ("| scenario | runs | violations (false alarms if it must pass) | unknown | harness errors | expected anomaly "
          "| hit rate | measured |")


def kept_rows() -> dict[str, str]:
    """The rows DETECTION.md already has, by scenario: a detect of some scenarios keeps the others' figures."""
    if not OUT.exists():
        return {}
    lines = OUT.read_text().splitlines()
    table = lines[lines.index(HEADER) + 2:] if HEADER in lines else []
    return {ln.split("|")[1].strip(): ln for ln in table if ln.startswith("| ")}


def write(rows: dict[str, str], command: str, minutes: float, done: bool) -> None:
    """DETECTION.md, rewritten after every scenario so an interrupted detect keeps what it measured."""
    OUT.write_text("\n".join([
        "# Detection power", "",
        "Each row: its scenario run with seeds 0..runs-1 by `make detect` on the date it names. Must-pass scenarios "
        "(violations are false alarms) run DETECT_RUNS_PASS times, known-unsafe ones DETECT_RUNS_UNSAFE times; a "
        "detect limited by DETECT_ONLY replaces only its own rows.", "",
        f"Last command: `{command}`; {'took' if done else 'still running after'} {minutes:.0f} min.", "",
        HEADER, "|---|---|---|---|---|---|---|---|", *rows.values(), ""]))


def main() -> None:
    ensure_engine()
    root = Path(os.environ.get("DETECT_RUNS_DIR", "runs/detect"))
    n_pass, n_unsafe = int(os.environ.get("DETECT_RUNS_PASS", "20")), int(os.environ.get("DETECT_RUNS_UNSAFE", "10"))
    only = [n for n in os.environ.get("DETECT_ONLY", "").split(",") if n]
    command = " ".join([*(f"{k}={os.environ[k]}" for k in ("DETECT_RUNS_PASS", "DETECT_RUNS_UNSAFE", "DETECT_ONLY")
                          if os.environ.get(k)), "make detect"])
    started = time.monotonic()
    rows = kept_rows()
    for names, runs in ((MUST_PASS, n_pass), (UNSAFE, n_unsafe)):
        for name in names:
            if not only or name in only:
                rows |= rows_for(name, runs, root)
                write(rows, command, (time.monotonic() - started) / 60, done=False)
    write(rows, command, (time.monotonic() - started) / 60, done=True)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
