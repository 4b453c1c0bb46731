"""The version × scenario × seed matrix of `kchaos compare`: a deterministic slice per machine
(`--shard I/N`), and the single table built from the run directories of every slice (`--merge`)."""

from __future__ import annotations

import re
from pathlib import Path

from contracts.errors import UsageError
from contracts.results import RunResult
from contracts.scenario import Scenario
from contracts.versions import split_target, target_label

SHARD = re.compile(r"^(\d+)/(\d+)$")


def parse_shard(value: str | None) -> tuple[int, int] | None:
    """--shard I/N as (I, N), 1 <= I <= N; one clear error otherwise."""
    if value is None:
        return None
    m = SHARD.match(value)
    if not m or not 1 <= int(m[1]) <= int(m[2]):
        raise UsageError("Expected --shard I/N with 1 <= I <= N (e.g. 2/4) but got --shard "
                         f"{value!r}")
    return int(m[1]), int(m[2])


def shard(cells: list[tuple[str, Scenario]],
          which: tuple[int, int] | None) -> list[tuple[str, Scenario]]:
    """Slice I of N of the (version, scenario) cells, every seed its own cell, dealt round-robin in
    a fixed order (version, scenario name, seed), so N machines given the same command run each cell
    exactly once."""
    if which is None:
        return cells
    i, n = which
    ordered = sorted(cells, key=lambda c: (c[0], c[1].name, c[1].seed))
    return [c for k, c in enumerate(ordered) if k % n == i - 1]


def column_elsewhere(version: str, s: Scenario, versions: list[str]) -> str | None:
    """The other requested column a cell's runs belong to, when the scenario's own metadata mode
    puts them there (zk-controller-failover asked of 3.9.2 beside 3.9.2:zookeeper runs in ZooKeeper
    mode); None otherwise. Running such a cell would fill that column twice over."""
    runs_as = target_label(s.kafka.version, s.kafka.metadata)
    asked = {target_label(*split_target(v)) for v in versions}
    return runs_as if runs_as != target_label(*split_target(version)) and runs_as in asked else None


def merged(dirs: list[Path]) -> list[RunResult]:
    """Every run's results.json under these directories (the run directories of the shards, copied
    together), each with its run directory where it was found, so a comparison links the copies, not
    where the runs were made."""
    found = []
    for d in dirs:
        if not d.is_dir():
            raise UsageError(f"--merge {d}: no such directory; name the run directories the shards "
                             "wrote")
        found += sorted(d.rglob("results.json"))
    if not found:
        raise UsageError(f"--merge {' '.join(map(str, dirs))}: no results.json under them; name "
                         "the "
                         "directories `kchaos compare --shard` wrote its runs into")
    return [RunResult.load(p) for p in found]
