"""The samplers: leader, ISR and the active controller of every partition of every topic every 500
ms; the remote tier's segments and the log start offsets every second; the harness's own memory
and its client processes' every minute."""

from __future__ import annotations

import os
from collections.abc import Callable

import orjson
import psutil

from contracts.history import Event, HistoryWriter, RemoteSegment, now_ns
from workloads.worker import Worker


class MetadataSampler(Worker):
    """Samples every topic's partition metadata on a thread; sampling errors are recorded, never
    fatal."""

    def __init__(self, topics: tuple[str, ...],
                 partitions: Callable[[tuple[str, ...]], dict[str, dict]],
                 controller: Callable[[], int], history: HistoryWriter,
                 every_s: float = 0.5) -> None:
        super().__init__("metadata-sampler")
        self.topics, self.partitions, self.controller, self.history, self.every_s = (
            topics, partitions, controller, history, every_s)

    def sample(self) -> None:
        """One sample of every partition of every topic from one answer (a sample-error event for a
        topic missing from it, or for the whole sample if no broker answered)."""
        t = now_ns()
        try:
            by_topic = self.partitions(self.topics)
            controller = self.controller()
        except Exception as exc:  # noqa: BLE001 - any failure to sample is a finding, not a crash
            self.history.event("sampler", Event.SAMPLE_ERROR, detail=f"{type(exc).__name__}: {exc}",
                               t=t)
            return
        for topic in self.topics:
            if topic not in by_topic:
                self.history.event("sampler", Event.SAMPLE_ERROR, topic=topic,
                                   detail="absent from the answer", t=t)
                continue
            self.history.write_many("metadata", [
                {"t": t, "topic": topic, "partition": p.id, "leader": p.leader,
                 "isr": ",".join(str(i) for i in sorted(p.isrs)), "controller": controller}
                for p in by_topic[topic].values()])

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            self.sample()


class TierSampler(Worker):
    """Records every second which segments the remote tier gained and lost, and where each
    partition's log start offset moved."""

    def __init__(self, remote: Callable[[], list[RemoteSegment]],
                 starts: Callable[[], dict[tuple[str, int], int]], history: HistoryWriter,
                 every_s: float = 1.0) -> None:
        super().__init__("tier-sampler")
        self.remote, self.starts, self.history, self.every_s = remote, starts, history, every_s
        self._held: dict[str, RemoteSegment] = {}
        self._start: dict[tuple[str, int], int] = {}

    def sample(self) -> None:
        """One look at the remote tier and the log start offsets; the changes as events."""
        t = now_ns()
        held = {s.segment: s for s in self.remote()}
        for kind, gone in ((Event.REMOTE_UPLOADED, held.keys() - self._held.keys()),
                           (Event.REMOTE_DELETED, self._held.keys() - held.keys())):
            for seg in sorted(((held | self._held)[g] for g in gone), key=_place):
                self.history.event("sampler", kind, topic=seg.topic, partition=seg.partition,
                                   offset=seg.base_offset, detail=seg.detail(), t=t)
        self._held = held
        try:
            starts = self.starts()
        except Exception as exc:  # noqa: BLE001 - any failure to sample is a finding, not a crash
            self.history.event("sampler", Event.SAMPLE_ERROR, detail=f"log starts: {exc}", t=t)
            return
        seen = now_ns()  # each start below held by then: retention-breach judges by this time
        for (topic, p), start in sorted(starts.items()):
            if self._start.get((topic, p), 0) != start:
                self.history.event("sampler", Event.LOG_START, topic=topic, partition=p,
                                   offset=start, t=seen)
        self._start |= starts

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            self.sample()


def _place(s: RemoteSegment) -> tuple[str, int, int]:
    return s.topic, s.partition, s.base_offset


def rss(pids: list[int]) -> int:
    """Resident bytes of these processes together (a process that has ended counts nothing)."""
    total = 0
    for pid in pids:
        try:
            total += psutil.Process(pid).memory_info().rss
        except psutil.Error:
            continue
    return total


class MemorySampler(Worker):
    """Records the resident memory of the harness process and of its client processes, together and
    each by name, at start and each `every_s` (a long run's memory must stay flat: only the history
    on disk may grow)."""

    def __init__(self, clients: Callable[[], dict[str, int]], history: HistoryWriter,
                 every_s: float = 60.0) -> None:
        super().__init__("memory-sampler")
        self.clients, self.history, self.every_s = clients, history, every_s
        self._workload_over = False

    def workload_over(self) -> None:
        """The producers have stopped: later samples are marked `end` (the heal, drain and dump are
        no workload)."""
        self._workload_over = True

    def sample(self, end: bool = False) -> None:
        """One `memory` event (`end`: taken after the workload, the last when the run stops
        sampling)."""
        each = {name: rss([pid]) for name, pid in self.clients().items()}
        detail = ({"harness": rss([os.getpid()]), "clients": sum(each.values()), "each": each}
                  | ({"end": True} if end or self._workload_over else {}))
        self.history.event("harness", Event.MEMORY, detail=orjson.dumps(detail).decode())

    def _run(self) -> None:
        self.sample()
        while not self._stop.wait(self.every_s):
            self.sample()
        self.sample(end=True)
