"""Small histories built by hand: a clean baseline that each test bends into exactly one anomaly."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from contracts.history import HistoryWriter

TOPIC = "chaos"


@dataclass
class History:
    """Rows per table; `write(dir)` lays them out as a run's history directory."""

    rows: dict[str, list[dict]] = field(default_factory=lambda: {})
    t: int = 1_000_000_000

    def _add(self, table: str, row: dict) -> History:
        self.t += 10_000_000
        self.rows.setdefault(table, []).append(row)
        return self

    def send(self, producer: int, seq: int, partition: int, offset: int, outcome: str = "ok", error: str = "X",
             took_ns: int = 5_000_000) -> History:
        return self._add("sends", {"producer": producer, "seq": seq, "key": None, "topic": TOPIC,
                                   "partition": partition, "t_invoke": self.t, "t_complete": self.t + took_ns,
                                   "outcome": outcome, "error": None if outcome == "ok" else error,
                                   "offset": offset if outcome == "ok" else -1})

    def read(self, reader: str, partition: int, offset: int, producer: int, seq: int, poll: int = 1,
             phase: str | None = None, checksum_ok: bool = True) -> History:
        return self._add("reads", {"reader": reader, "phase": phase or ("final" if reader == "drain" else "live"),
                                   "poll": poll, "t": self.t, "topic": TOPIC, "partition": partition,
                                   "offset": offset, "producer": producer, "seq": seq, "checksum_ok": checksum_ok})

    def replica(self, broker: int, partition: int, offset: int, producer: int, seq: int) -> History:
        return self._add("replicas", {"broker": broker, "topic": TOPIC, "partition": partition, "offset": offset,
                                      "leader_epoch": 0, "producer": producer, "seq": seq, "checksum_ok": True})

    def event(self, source: str, kind: str, partition: int = -1, offset: int = -1, detail: str = "") -> History:
        return self._add("events", {"t": self.t, "source": source, "kind": kind, "topic": TOPIC,
                                    "partition": partition, "offset": offset, "detail": detail})

    def drop(self, table: str, **match) -> History:
        """Remove the rows of a table that match every given column."""
        self.rows[table] = [r for r in self.rows.get(table, []) if any(r.get(k) != v for k, v in match.items())]
        return self

    def write(self, directory: Path, compact: bool = True) -> Path:
        w = HistoryWriter(directory, flush_s=60)
        for table, rows in self.rows.items():
            w.write_many(table, rows)
        w.close(compact=compact)
        return directory


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
        h.event("drain", "final-end", partition=p, offset=offsets[p], detail="reached")
    h.event("runner", "replicas-dumped")
    return h
