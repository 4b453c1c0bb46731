"""A seeded fault schedule (what fires when) and the nemesis thread that carries it out and records it."""

from __future__ import annotations

import json
import random
import threading
import time
import traceback
from dataclasses import asdict, dataclass
from pathlib import Path

from contracts.history import Event, HistoryWriter, now_ns
from contracts.scenario import FaultSpec
from faults.ops import Ctx
from faults.ports import ClusterControl, ConsumerControl
from faults.registry import KINDS
from faults.targets import resolve


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
    ops = []
    for i, f in enumerate(faults):
        t = f.after
        while t + min(f.for_, duration) <= duration:
            ops.append(PlannedOp(round(t, 3), i, f.fault, f.for_))
            t += max(0.5, f.every + rng.uniform(-f.jitter, f.jitter))
    return sorted(ops, key=lambda o: (o.at, o.index))


def save(ops: list[PlannedOp], path: Path) -> None:
    """Write a schedule as schedule.json."""
    path.write_text(json.dumps([asdict(o) for o in ops], indent=1))


def load(path: Path) -> list[PlannedOp]:
    """Read a schedule.json."""
    return [PlannedOp(**o) for o in json.loads(path.read_text())]


class Nemesis:
    """Runs a schedule against a cluster on one thread, one op at a time, each op recorded in `faults`."""

    def __init__(self, cluster: ClusterControl, topic: str, faults: list[FaultSpec], ops: list[PlannedOp],
                 seed: int, history: HistoryWriter, consumers: list[ConsumerControl] | None = None) -> None:
        self.cluster, self.topic, self.faults, self.ops, self.history = cluster, topic, faults, ops, history
        self.stop_event = threading.Event()
        self.ctx = Ctx(cluster, topic, random.Random(seed + 1), self.stop_event, consumers or [])
        self.active: str = ""
        self.errors: list[str] = []
        self.thread = threading.Thread(target=self._run, name="nemesis", daemon=True)

    def start(self) -> Nemesis:
        self.t0 = time.monotonic()
        self.thread.start()
        return self

    def stop(self) -> None:
        """Ask the current op to heal early and wait for it."""
        self.stop_event.set()
        self.thread.join(300)

    def _run(self) -> None:
        for op in self.ops:
            if self.stop_event.wait(max(0.0, self.t0 + op.at - time.monotonic())):
                return
            self.fire(op)

    def fire(self, op: PlannedOp) -> None:
        spec = self.faults[op.index]
        kind = KINDS[spec.fault]
        t_start = now_ns()
        targets: list[int] = []
        detail: dict = {"planned_at": op.at, "target": spec.target}
        try:
            if kind.needs_targets:
                targets, detail["partition"] = resolve(spec.target, self.cluster, self.topic, self.ctx.rng)
                if not targets:
                    detail["skipped"] = f"no node matched target {spec.target!r} at this moment"
            if targets or not kind.needs_targets:
                self.active = f"{spec.fault}({','.join(map(str, targets))})"
                detail |= kind.op(self.ctx, spec, targets)
        except Exception as exc:  # noqa: BLE001 - a failed op is recorded; the run goes on and heals at the end
            detail["error"] = f"{type(exc).__name__}: {exc}"
            self.errors.append(detail["error"])
            detail["trace"] = traceback.format_exc(limit=3)
        finally:
            self.active = ""
            self.history.fault(spec.fault, t_start, targets, detail)


def heal_all(cluster: ClusterControl, topic: str, history: HistoryWriter, timeout_s: float) -> bool:
    """Final generator: heal every network rule, resume, restart stopped brokers, wait for full ISR everywhere.
    Records a `heal` fault row, and a liveness finding if the ISR never recovers (returns False)."""
    t_start = now_ns()
    cluster.heal()
    stopped = cluster.stopped()
    cluster.start_nodes(stopped)
    detail: dict = {"restarted": stopped}
    recovered = True
    try:
        cluster.metadata.wait_full_isr(topic, timeout_s)
    except Exception as exc:  # noqa: BLE001 - never hang, never crash: record what was seen
        recovered = False
        detail["not_recovered"] = str(exc)
        history.event("nemesis", Event.LIVENESS, topic=topic,
                      detail=f"full ISR not restored within {timeout_s:.0f}s: {exc}")
    history.fault("heal", t_start, stopped, detail)
    return recovered
