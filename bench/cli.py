"""How fast the light commands answer: `kchaos --help`, `--version`, `scenarios list` and
`validate`, each beside the interpreter's own start and beside importing the engine's commands, in
the same run."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

KCHAOS = str(Path(sys.executable).with_name("kchaos"))
RUNS = 5
COMMANDS = {
    "`python -c pass` (baseline: the interpreter alone)": [sys.executable, "-c", "pass"],
    "`kchaos --help`": [KCHAOS, "--help"],
    "`kchaos --version`": [KCHAOS, "--version"],
    "`kchaos scenarios list`": [KCHAOS, "scenarios", "list"],
    "`kchaos validate acks-all-leader-kill`": [KCHAOS, "validate", "acks-all-leader-kill"],
    "`python -c 'import kchaos.commands'` (reference: what every command loaded before)":
        [sys.executable, "-c", "import kchaos.commands"],
}


def _wall(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, capture_output=True, check=True)
    return time.perf_counter() - started


def section() -> list[str]:
    """The bench's Markdown section: the median and the spread of RUNS runs of each command."""
    rows = []
    for what, argv in COMMANDS.items():
        first = _wall(argv)  # in a fresh venv, this one also writes the bytecode caches
        times = [_wall(argv) for _ in range(RUNS)]
        rows.append(f"| {what} | {first:.2f} s | {statistics.median(times):.2f} s | "
                    f"{min(times):.2f}-{max(times):.2f} s |")
    return ["## The CLI's light commands", "", f"Measured {time.strftime('%Y-%m-%d')}.", "",
            f"Command: `BENCH=cli make bench` (a first run, then {RUNS} more), from the venv `make "
            "setup` made.", "",
            "| command | first run | median of the next | range |", "|---|---|---|---|", *rows, ""]
