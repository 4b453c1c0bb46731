"""The nemesis: it carries out a planned fault schedule (faults.plan), one thread per fault line,
and records how every planned op ended."""

from __future__ import annotations

import random
import threading
import time
import traceback
from collections.abc import Callable

from contracts.faultkinds import FAULT_KINDS
from contracts.history import Event, HistoryWriter, Outcome, now_ns
from contracts.scenario import FaultSpec
from faults.ops import Ctx, NoEffect, Stalled
from faults.plan import PlannedOp, op_spec
from faults.ports import Clients, ClusterControl
from faults.registry import OPS
from faults.targets import resolve

STOP_WAIT_S = 300.0


class Nemesis:
    """Runs a schedule against a cluster: each fault line on a thread of its own, so one line's slow
    op never delays another's; an op whose brokers another line's op holds is skipped (an op that
    picks its own brokers as it goes, a rolling restart, holds them all; an upgrade, each in turn).
    Every planned op ends as one `faults` row: fired, skipped, failed, no-effect, or (when the run
    ended first) not-reached."""

    def __init__(self, cluster: ClusterControl, topic: str, faults: list[FaultSpec],
                 ops: list[PlannedOp], seed: int, history: HistoryWriter,
                 clients: Clients | None = None,
                 on_failure: Callable[[str], None] = lambda error: None) -> None:
        self.cluster, self.topic, self.faults, self.history = cluster, topic, faults, history
        # told each failed op's error as it happens (the cluster still as it failed)
        self.on_failure = on_failure
        self.clients = clients or Clients()
        self.stop_event = threading.Event()
        self.lines = {i: [op for op in ops if op.index == i]
                      for i in sorted({op.index for op in ops})}
        self.ctx = {i: Ctx(cluster, topic, random.Random(seed + 1 + i), self.stop_event,
                           self.clients, f"line-{i}", lambda b, i=i: self.claim(i, b),
                           lambda i=i: self.release(i))
                    for i in self.lines}
        self.started: set[PlannedOp] = set()
        self.running: dict[int, str] = {}
        self.held: dict[int, int] = {}  # broker -> the line whose running op holds it
        self._held_lock = threading.Lock()
        self.errors: list[str] = []
        self.threads = [threading.Thread(target=self._line, args=(i,), name=f"nemesis-{i}",
                                         daemon=True)
                        for i in self.lines]

    @property
    def active(self) -> str:
        """The ops running now, for the progress line."""
        return " ".join(self.running.values())

    def start(self) -> Nemesis:
        """Start every line's clock now (the schedule's zero)."""
        self.t0, self.t0_ns = time.monotonic(), now_ns()
        for t in self.threads:
            t.start()
        return self

    def stop(self, wait_s: float = STOP_WAIT_S) -> None:
        """Ask running ops to heal early, wait for them (up to `wait_s` each), and record every op
        never started as not reached."""
        self.stop_event.set()
        for t in self.threads:
            t.join(wait_s)
        for i, ops in self.lines.items():
            for op in ops:
                if op not in self.started:
                    self._record(op, now_ns(), [],
                                 {"planned_at": op.at, "target": self.faults[i].target},
                                 Outcome.NOT_REACHED)

    def _line(self, index: int) -> None:
        for op in self.lines[index]:
            if self.stop_event.wait(max(0.0, self.t0 + op.at - time.monotonic())):
                return
            self.started.add(op)
            self.fire(op)

    def fire(self, op: PlannedOp) -> None:
        """Run one op; record it with its delay from the plan and how it ended."""
        spec, kind, ctx = op_spec(self.faults[op.index],
                                  op), FAULT_KINDS[op.fault], self.ctx[op.index]
        t_start = now_ns()
        targets: list[int] = []
        detail: dict = {"planned_at": op.at, "target": spec.target,
                        "delay_s": round((t_start - self._planned(op)) / 1e9, 3)}
        outcome = Outcome.FIRED
        try:
            if kind.needs_targets:
                targets, detail["partition"] = resolve(
                    spec.target, self.cluster, self.topic, ctx.rng, self.clients.group,
                    self.clients.txn_id)
                if not targets:
                    detail["skipped"] = f"no node matched target {spec.target!r} at this moment"
                    outcome = Outcome.SKIPPED
                elif busy := self.claim(op.index, targets):
                    detail["skipped"] = f"brokers {busy} were held by another fault line's op"
                    outcome, targets = Outcome.SKIPPED, []
            elif kind.aims == "itself" and kind.claims == "all" and (
                    busy := self.claim(op.index, self.cluster.node_ids())):
                detail["skipped"] = (f"brokers {busy} were held by another fault line's op "
                                     "(this op may touch any)")
                outcome = Outcome.SKIPPED
            if outcome is Outcome.FIRED:
                self.running[op.index] = f"{spec.fault}({','.join(map(str, targets))})"
                detail["hold_s"] = spec.for_
                detail |= OPS[spec.fault](ctx, spec, targets)
        except NoEffect as exc:
            outcome, detail["error"] = Outcome.NO_EFFECT, str(exc)
            self.errors.append(f"{spec.fault} at {op.at} s had no effect: {exc}")
            if isinstance(exc, Stalled):
                self.history.event("nemesis", Event.LIVENESS, detail=str(exc))
        except Exception as exc:  # noqa: BLE001 - a failed op is recorded; the run goes on and heals at the end
            outcome, detail["error"] = Outcome.FAILED, f"{type(exc).__name__}: {exc}"
            detail["trace"] = traceback.format_exc(limit=3)
            self.errors.append(f"{spec.fault} at {op.at} s failed: {detail['error']}")
            self.on_failure(detail["error"])
        finally:
            self.running.pop(op.index, None)
            self.release(op.index)
            self._record(op, t_start, targets, detail, outcome)

    def claim(self, line: int, brokers: list[int]) -> list[int]:
        """Hold brokers for a line's op, so another line's op cannot kill or pause one mid-restart;
        returns those another line holds (and claims none then)."""
        with self._held_lock:
            busy = sorted(b for b in brokers if self.held.get(b, line) != line)
            if not busy:
                self.held.update(dict.fromkeys(brokers, line))
            return busy

    def release(self, line: int) -> None:
        """Let go of what a line's op held."""
        with self._held_lock:
            self.held = {b: held_by for b, held_by in self.held.items() if held_by != line}

    def _planned(self, op: PlannedOp) -> int:
        return self.t0_ns + int(op.at * 1e9)

    def _record(self, op: PlannedOp, t_start: int, targets: list[int], detail: dict,
                outcome: Outcome) -> None:
        self.history.fault(op.fault, t_start, targets, detail, line=op.index,
                           planned=self._planned(op), outcome=outcome)


def heal_all(cluster: ClusterControl, topic: str, history: HistoryWriter, timeout_s: float) -> bool:
    """Final generator: heal every network rule, resume, restart stopped brokers, wait for full ISR
    everywhere. Records a `heal` fault row, and a liveness finding if the ISR never recovers
    (returns False)."""
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
