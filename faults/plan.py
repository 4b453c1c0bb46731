"""A seeded fault schedule: when each fault line's ops fire and for how long, as schedule.json records it. Pure:
planning needs no cluster."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from contracts.scenario import FaultSpec


@dataclass(frozen=True)
class PlannedOp:
    """One fault firing: seconds after the workload starts, which of the scenario's faults, for how long."""

    at: float
    index: int
    fault: str
    hold: float


def plan(faults: list[FaultSpec], duration: float, seed: int) -> list[PlannedOp]:
    """The schedule for a run: each fault from `after`, every `every` seconds ± `jitter`, ending by `duration`."""
    rng = random.Random(seed)
    ops = [PlannedOp(round(t, 3), i, f.fault, f.for_) for i, f in enumerate(faults)
           for t in line_starts(f, duration, lambda f=f: f.every + rng.uniform(-f.jitter, f.jitter))]
    return sorted(ops, key=lambda o: (o.at, o.index))


def line_starts(f: FaultSpec, duration: float, gap: Callable[[], float]) -> Iterator[float]:
    """When a fault line's ops start: from `after`, each `gap()` (at least 0.5 s) after the one before, while its
    hold still ends by `duration`."""
    t = f.after
    while t + min(f.for_, duration) <= duration:
        yield t
        t += max(0.5, gap())


def save(ops: list[PlannedOp], path: Path) -> None:
    """Write a schedule as schedule.json."""
    path.write_text(json.dumps([asdict(o) for o in ops], indent=1))


def load(path: Path) -> list[PlannedOp]:
    """Read a schedule.json."""
    return [PlannedOp(**o) for o in json.loads(path.read_text())]
