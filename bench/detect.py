"""`make detect`: false-alarm rate of must-pass scenarios and hit rate of known-unsafe ones; writes
DETECTION.md.

DETECT_RUNS_PASS (default 20) and DETECT_RUNS_UNSAFE (default 10, regressions and findings too) set
the runs per scenario;
DETECT_ONLY=a,b limits it to some scenarios, whose rows replace theirs in DETECTION.md (the other
rows stay). DETECT_KAFKA=V runs them on Kafka V, in rows of their own (`name on V`), and
DETECT_CLIENT=C with every role's client C (`name with C`).
DETECT_RESUME=1 keeps each row's seeds 0..runs-1 and runs only the seeds after them, adding to its
counts: a detect longer than one sitting is measured in parts.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from contracts import signals
from contracts.errors import first_line
from contracts.results import RunResult
from harness.engine import ensure_engine
from kchaos.catalog import catalog, load
from kchaos.overrides import override
from runloop.check import run_and_check

MUST_PASS = ["acks-all-leader-kill", "idempotent-resets-failovers", "rolling-restart",
             "controller-failover", "zombie-leader-acks-all", "isr-shrink-paused-follower",
             "consumer-group-rebalance", "consumer-group-cooperative", "consumer-group-kip848",
             "txn-leader-kill", "txn-coordinator-kill", "txn-two-topics", "txn-client-pause",
             "eos-copy-member-kill", "eos-copy-coordinator-kill", "power-loss-one",
             "power-loss-all-flushed", "latency-slow-follower", "latency-slow-clients",
             "latency-slow-controller", "tiered-leader-kill", "tiered-remote-faults",
             "share-member-kill", "share-leader-kill", "share-coordinator-kill",
             "share-coordinator-and-leader-kill", "share-member-pause-and-cut",
             "txn-stale-requests", "upgrade-3.9-to-4.4",
             "upgrade-4.3-to-4.4", "rollback-4.4-to-4.3", "upgrade-txn-3.9-to-4.4",
             "migrate-zk-to-kraft", "kip853-controller-swap", "tiered-copy-race-control"]
# Known Kafka bugs: run on the version that has each (a violation is a hit) and the one that fixed
# it (must pass)
REGRESSIONS = ["kip101-hw-truncation", "kip101-power-loss-divergence",
               "kafka7128-stale-hw-isr-join", "kip279-fast-failover-divergence",
               "kafka13636-offsets-expire-in-rebalance", "kafka20732-tiered-retention-fresh-leader"]
UNSAFE = ["acks1-leader-kill", "zombie-leader-acks1", "non-idempotent-retries",
          "unclean-election-true", "consumer-group-at-most-once", "txn-judged-uncommitted",
          "eos-copy-offsets-outside", "power-loss-all", "share-accept-before"]
# Kafka bugs found here and not yet fixed (docs/findings): each expects the anomaly that shows it
FINDINGS = ["tiered-copy-race"]
ENV = ("DETECT_RUNS_PASS", "DETECT_RUNS_UNSAFE", "DETECT_ONLY", "DETECT_RESUME", "DETECT_KAFKA",
       "DETECT_CLIENT")
OUT = Path(__file__).resolve().parents[1] / "DETECTION.md"


@dataclass
class Row:
    """One scenario's counts over seeds 0..runs-1 and the dates they were measured."""

    name: str
    expect: str
    runs: int = 0
    violations: int = 0
    unknown: int = 0
    errors: int = 0
    hits: int = 0
    measured: str = ""

    def line(self) -> str:
        rate = f"{self.hits}/{self.runs}" if self.expect != "-" else "-"
        return (f"| {self.name} | {self.runs} | {self.violations} | {self.unknown} | {self.errors} "
                f"| {self.expect} | {rate} | {self.measured} |")

    @classmethod
    def parse(cls, line: str) -> Row:
        """A row as DETECTION.md's table holds it."""
        name, runs, violations, unknown, errors, expect, rate, measured = (
            c.strip() for c in line.split("|")[1:9])
        hits = int(rate.split("/")[0]) if rate != "-" else 0
        return cls(name, expect, int(runs), int(violations), int(unknown), int(errors), hits,
                   measured)

    def count(self, r: RunResult | None) -> None:
        """Add one seed's result (None: a harness error) and today's date to the row; a hit is an
        expectation met."""
        self.runs += 1
        self.errors += r is None
        self.violations += r is not None and r.verdict is False
        self.unknown += r is not None and r.verdict is None
        self.hits += r is not None and self.expect != "-" and not r.missing_expect
        today = time.strftime("%Y-%m-%d")
        first = self.measured.split(" to ")[0] or today
        self.measured = today if first == today else f"{first} to {today}"


def run_rows(name: str, runs: int, root: Path, rows: dict[str, str], errors: list[str],
             resume: bool, save: Callable[[], None],
             on: tuple[str | None, str | None] = (None, None)) -> None:
    """Run each row (matrix combination) of a scenario up to seed runs-1 (`on` a Kafka version and
    with a client, where given), updating rows (and errors, one line per harness error) and saving
    after each seed."""
    kafka, client = on
    # on one Kafka version a regression's two releases are one scenario: override runs it once
    for base in override(load(catalog()[name]), kafka, None, None, client):
        # a row names the release it ran on, so that a new default starts rows of its own
        pinned = "version=" in base.name and not kafka
        label = base.name + ("" if pinned else f" on {base.kafka.version}") + (
            f" with {client}" if client else "")
        kept = rows.get(label)
        bug = base.bug_expected
        expect = f"[{bug.bug}]({bug.link}) violated" if bug else ", ".join(base.expect) or "-"
        row = Row.parse(kept) if resume and kept else Row(label, expect)
        for seed in range(row.runs, runs):
            (s,) = override([base], None, seed, None)
            try:
                row.count(run_and_check(s, root).result)
            except Exception as exc:  # noqa: BLE001 - a harness error is a finding of its own, not the end of detect
                if signals.SIGNALLED:  # the run's cleanup failed after a signal: detect ends
                    raise
                row.count(None)
                cause = first_line(exc)[:200]
                errors.append(f"- {s.name} seed {seed} ({time.strftime('%Y-%m-%d')}): "
                              f"{type(exc).__name__}: {cause}")
                print(errors[-1], flush=True)
            rows[label] = row.line()
            save()
        print(rows.get(label, f"{label}: nothing to run"), flush=True)


HEADER = ("| scenario | runs | violations (false alarms if it must pass) | unknown | harness "
          "errors | expected anomaly | hit rate | measured |")


ERRORS = "## Harness errors"
# kept as written by hand: which finding explains which run
TRACED = "## Must-pass violations and unknowns, traced"


def _bullets(lines: list[str], header: str) -> list[str]:
    """The `- ` lines of one section, each with the indented lines that continue it, up to the next
    header."""
    if header not in lines:
        return []
    section = lines[lines.index(header) + 1:]
    end = next((i for i, ln in enumerate(section) if ln.startswith("## ")), len(section))
    kept: list[str] = []
    for ln in section[:end]:
        if ln.startswith("- ") or (kept and ln.startswith("  ")):
            kept.append(ln)
    return kept


def kept() -> tuple[dict[str, str], list[str], list[str]]:
    """The rows DETECTION.md already has, by scenario, its harness-error lines and its traced lines:
    a detect of some scenarios keeps the others' figures, and every sitting's errors and
    explanations stay listed."""
    if not OUT.exists():
        return {}, [], []
    lines = OUT.read_text().splitlines()
    table = lines[lines.index(HEADER) + 2:] if HEADER in lines else []
    rows = {}
    for ln in table:
        if not ln.startswith("| "):
            break
        rows[ln.split("|")[1].strip()] = ln
    return rows, _bullets(lines, ERRORS), _bullets(lines, TRACED)


def write(rows: dict[str, str], errors: list[str], command: str, minutes: float, done: bool,
          traced: tuple[str, ...] | list[str] = ()) -> None:
    """DETECTION.md, rewritten after every seed so an interrupted detect keeps what it measured."""
    OUT.write_text("\n".join([
        "# Detection power", "",
        "Each row: its scenario run with seeds 0..runs-1 by `make detect` on the date it "
        "names. Must-pass scenarios (violations are false alarms) run DETECT_RUNS_PASS times, "
        "known-unsafe ones DETECT_RUNS_UNSAFE times; a detect limited by DETECT_ONLY replaces "
        "only its own rows; with DETECT_RESUME=1 it adds the seeds after a row's last one to "
        "its counts (a row measured over several days names the first and the last). A "
        "must-pass violation is a false alarm unless a draft report in docs/findings/ traces "
        "it to Kafka or its client.", "",
        f"Last command: `{command}`; {'took' if done else 'still running after'} {minutes:.0f} "
        "min.", "",
        HEADER, "|---|---|---|---|---|---|---|---|", *rows.values(), "",
        *([TRACED, "", "Must-pass runs that violated or were unknown, and what explains each "
                       "(written by hand):", "",
           *traced, ""] if traced else []),
        *([ERRORS, "", "Runs that ended without a verdict (each a harness error in its row, never "
                       "a pass):", "",
           *errors, ""] if errors else [])]))


def main() -> None:
    root = Path(os.environ.get("DETECT_RUNS_DIR", "runs/detect"))
    n_pass, n_unsafe = int(os.environ.get("DETECT_RUNS_PASS",
                                          "20")), int(os.environ.get("DETECT_RUNS_UNSAFE", "10"))
    only = [n for n in os.environ.get("DETECT_ONLY", "").split(",") if n]
    resume = os.environ.get("DETECT_RESUME") == "1"
    if unknown := [n for n in only if n not in MUST_PASS + UNSAFE + REGRESSIONS + FINDINGS]:
        print("Expected scenarios of MUST_PASS, UNSAFE, REGRESSIONS or FINDINGS (bench/detect.py) "
              "but got "
              f"DETECT_ONLY names {unknown}; add them there or fix the names", file=sys.stderr)
        sys.exit(2)
    ensure_engine()
    command = " ".join([*(f"{k}={os.environ[k]}" for k in ENV if os.environ.get(k)), "make detect"])
    started = time.monotonic()
    rows, errors, traced = kept()

    def save(done: bool = False) -> None:
        write(rows, errors, command, (time.monotonic() - started) / 60, done, traced)

    with signals.handled():  # SIGTERM ends detect, not only the run it cut short
        for names, runs in ((MUST_PASS, n_pass), (UNSAFE, n_unsafe), (REGRESSIONS, n_unsafe),
                            (FINDINGS, n_unsafe)):
            for name in names:
                if not only or name in only:
                    run_rows(name, runs, root, rows, errors, resume, save,
                             (os.environ.get("DETECT_KAFKA") or None,
                              os.environ.get("DETECT_CLIENT") or None))
    save(done=True)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
