"""Small histories built by hand with the public builder: a clean baseline that each test bends into exactly one
anomaly."""

from __future__ import annotations

from kchaos.history_builder import HistoryBuilder

TOPIC = "chaos"


class History(HistoryBuilder):
    """The public builder, with the tests' default error for a send that did not end ok."""

    def send(self, producer: int, seq: int, partition: int, offset: int, outcome: str = "ok", error: str = "X",
             took_ns: int = 5_000_000, key: str | None = None) -> History:
        super().send(producer, seq, partition, offset, outcome, error, took_ns, key)
        return self


def clean(partitions: int = 2, per_producer: int = 6, producers: int = 2, brokers: int = 3) -> History:
    """Every send acked, read once live by consumer-0 and once by the drain, present on every replica."""
    h = History()
    h.event("consumer-0", "assign")
    offsets = {p: 0 for p in range(partitions)}
    placed = []
    for pid in range(producers):
        for seq in range(per_producer):
            p = (pid + seq) % partitions
            h.send(pid, seq, p, offsets[p])
            placed.append((p, offsets[p], pid, seq))
            offsets[p] += 1
    for p, off, pid, seq in sorted(placed):
        h.read("consumer-0", p, off, pid, seq, poll=1 + off // 2)
    for p, off, pid, seq in sorted(placed):
        h.read("drain", p, off, pid, seq, poll=1)
        for b in range(1, brokers + 1):
            h.replica(b, p, off, pid, seq)
    for p in range(partitions):
        h.drain_end(p, offsets[p])
    return h.replicas_dumped()
