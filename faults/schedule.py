"""A seeded fault schedule (what fires when) and the nemesis thread that carries it out and records it."""

from __future__ import annotations

import json
import random
import threading
import time
import traceback
from dataclasses import asdict, dataclass
from pathlib import Path

from faults.ops import REGISTRY, Ctx, needs_targets
from faults.targets import resolve
from harness.history import HistoryWriter, now_ns
from harness.scenario import FaultSpec


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
    path.write_text(json.dumps([asdict(o) for o in ops], indent=1))


def load(path: Path) -> list[PlannedOp]:
    return [PlannedOp(**o) for o in json.loads(path.read_text())]


class Nemesis:
    """Runs a schedule against a cluster on one thread, one op at a time, each op recorded in `faults`."""

    def __init__(self, cluster, topic: str, faults: list[FaultSpec], ops: list[PlannedOp], seed: int,
                 history: HistoryWriter, consumers: list | None = None) -> None:
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
        t_start = now_ns()
        targets: list[int] = []
        detail: dict = {"planned_at": op.at, "target": spec.target}
        try:
            if needs_targets(spec.fault):
                targets, detail["partition"] = resolve(spec.target, self.cluster, self.topic, self.ctx.rng)
                if not targets:
                    detail["skipped"] = f"no node matched target {spec.target!r} at this moment"
            if targets or not needs_targets(spec.fault):
                self.active = f"{spec.fault}({','.join(map(str, targets))})"
                detail |= REGISTRY[spec.fault](self.ctx, spec, targets)
        except Exception as exc:  # noqa: BLE001 - a failed op is recorded; the run goes on and heals at the end
            detail["error"] = f"{type(exc).__name__}: {exc}"
            self.errors.append(detail["error"])
            detail["trace"] = traceback.format_exc(limit=3)
        finally:
            self.active = ""
            self.history.write("faults", {"t_start": t_start, "t_end": now_ns(), "fault": spec.fault,
                                          "targets": ",".join(map(str, targets)), "detail": json.dumps(detail)})


def heal_all(cluster, topic: str, history: HistoryWriter, timeout_s: float) -> bool:
    """Final generator: heal every network rule, resume, restart stopped brokers, wait for full ISR everywhere.
    Records a `heal` fault row, and a liveness finding if the ISR never recovers (returns False)."""
    t_start = now_ns()
    cluster.heal()
    stopped = [n.node_id for n in cluster.nodes if n.state() != "running"]
    cluster.start_nodes(stopped)
    detail: dict = {"restarted": stopped}
    recovered = True
    try:
        cluster.wait_full_isr(topic, timeout_s)
    except Exception as exc:  # noqa: BLE001 - never hang, never crash: record what was seen
        recovered = False
        detail["not_recovered"] = str(exc)
        history.write("events", {"t": now_ns(), "source": "nemesis", "kind": "liveness", "topic": topic,
                                 "partition": -1, "offset": -1,
                                 "detail": f"full ISR not restored within {timeout_s:.0f}s: {exc}"})
    history.write("faults", {"t_start": t_start, "t_end": now_ns(), "fault": "heal",
                             "targets": ",".join(map(str, stopped)), "detail": json.dumps(detail)})
    return recovered
