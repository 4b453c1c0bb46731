"""A seeded fault schedule: when each fault line's ops fire and for how long, as schedule.json
records it. Pure: planning needs no cluster."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from contracts.faultkinds import FAULT_KINDS
from contracts.faultlines import MIX, MIX_TARGETS, FaultSpec


@dataclass(frozen=True)
class PlannedOp:
    """One fault firing: seconds after the workload starts, which of the scenario's faults, for how
    long."""

    at: float
    index: int
    fault: str  # the kind that fires: the line's own, or the one a mix drew
    hold: float
    target: str | None = None  # the target a mix drew (None: the line's own)


def plan(faults: list[FaultSpec], duration: float, seed: int) -> list[PlannedOp]:
    """The schedule for a run: each fault from `after`, every `every` seconds ± `jitter`, ending by
    `duration`; a mix draws each op's kind and target from the same seed."""
    rng = random.Random(seed)
    ops = [_drawn(PlannedOp(round(t, 3), i, f.fault, f.for_), f, rng) for i, f in enumerate(faults)
           for t in line_starts(f, duration,
                                lambda f=f: f.every + rng.uniform(-f.jitter, f.jitter))]
    return sorted(ops, key=lambda o: (o.at, o.index))


def _drawn(op: PlannedOp, f: FaultSpec, rng: random.Random) -> PlannedOp:
    """A mix's op with its kind drawn, and a target for a kind aimed at brokers; any other op as it
    is."""
    if f.fault != MIX:
        return op
    kind = rng.choice(f.kinds)
    target = rng.choice(MIX_TARGETS) if FAULT_KINDS[kind].aims == "brokers" else None
    return replace(op, fault=kind, target=target)


def op_spec(line: FaultSpec, op: PlannedOp) -> FaultSpec:
    """What one op fires: its line, with the kind and target a mix drew for it."""
    if op.fault == line.fault:
        return line
    return line.model_copy(update={"fault": op.fault,
                                   "target": op.target or FAULT_KINDS[op.fault].default_target})


def line_starts(f: FaultSpec, duration: float, gap: Callable[[], float]) -> Iterator[float]:
    """When a fault line's ops start: from `after`, each `gap()` (at least 0.5 s) after the one
    before, while its hold still ends by `duration`; a kind that fires once, at `after` only."""
    t = f.after
    once = f.fault in FAULT_KINDS and FAULT_KINDS[f.fault].once
    while t + min(f.for_, duration) <= duration:
        yield t
        if once:
            return
        t += max(0.5, gap())


def save(ops: list[PlannedOp], path: Path) -> None:
    """Write a schedule as schedule.json."""
    path.write_text(json.dumps([asdict(o) for o in ops], indent=1))


def load(path: Path) -> list[PlannedOp]:
    """Read a schedule.json."""
    return [PlannedOp(**o) for o in json.loads(path.read_text())]
