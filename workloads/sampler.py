"""The metadata sampler: leader, ISR and the active controller of every partition, every 500 ms."""

from __future__ import annotations

from collections.abc import Callable

from contracts.history import Event, HistoryWriter, now_ns
from workloads.worker import Worker


class MetadataSampler(Worker):
    """Samples partition metadata on a thread; sampling errors are recorded, never fatal."""

    def __init__(self, topic: str, partitions: Callable[[], dict], controller: Callable[[], int],
                 history: HistoryWriter, every_s: float = 0.5) -> None:
        super().__init__("metadata-sampler")
        self.topic, self.partitions, self.controller, self.history, self.every_s = (
            topic, partitions, controller, history, every_s)

    def sample(self) -> None:
        """One sample of every partition (or a sample-error event)."""
        t = now_ns()
        try:
            parts = self.partitions()
            controller = self.controller()
        except Exception as exc:  # noqa: BLE001 - any failure to sample is a finding, not a crash
            self.history.event("sampler", Event.SAMPLE_ERROR, topic=self.topic, detail=f"{type(exc).__name__}: {exc}",
                               t=t)
            return
        self.history.write_many("metadata", [
            {"t": t, "topic": self.topic, "partition": p.id, "leader": p.leader,
             "isr": ",".join(str(i) for i in sorted(p.isrs)), "controller": controller}
            for p in parts.values()])

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            self.sample()
