"""Write a history by hand, from your own client's log, and check it with `kchaos analyze`
(docs/history-format.md).

    b = HistoryBuilder()
    b.send(producer=0, seq=0, partition=0, offset=0)          # an acked send
    b.send(producer=0, seq=1, partition=0, outcome="info")    # its fate never learned
    b.poll("consumer-0", (0, 0, 0, 0))  # one poll: (partition, offset, producer, seq)...
    b.read("drain", partition=0, offset=0, producer=0, seq=0)  # the final read found it
    b.drain_end(partition=0, end=1).replicas_dumped()
    b.write_run(Path("my-run"), {"name": "my-app", "producer": {"acks": "all"}})
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contracts.history import (
    NO_COMMIT,
    NO_OFFSET,
    NO_PARTITION,
    NO_TXN,
    Event,
    Fate,
    HistoryWriter,
    Retention,
)
from contracts.payload import COPY_BASE
from contracts.scenario import copy_topic
from contracts.share import AckOutcome, ShareState
from kchaos.catalog import validate

MS = 1_000_000


@dataclass
class HistoryBuilder:
    """Rows per table, each stamped by a clock that moves `step_ns` per row unless a time is
    given."""

    topic: str = "chaos"
    # the clock, ns (any monotonic origin: the analysis uses differences only)
    t: int = 1_000_000_000
    step_ns: int = 10 * MS
    rows: dict[str, list[dict]] = field(default_factory=dict)
    polls: dict[str, int] = field(default_factory=dict)  # each reader's last poll number
    # records added to a reader's poll so far
    in_poll: dict[tuple[str, int], int] = field(default_factory=dict)

    def _add(self, table: str, row: dict) -> HistoryBuilder:
        self.t += self.step_ns
        self.rows.setdefault(table, []).append(row)
        return self

    def send(self, producer: int, seq: int, partition: int, offset: int | None = None,
             outcome: str = "ok", error: str | None = None, took_ns: int = 5 * MS,
             txn: int = NO_TXN) -> HistoryBuilder:
        """One send and how it ended: ok (acked at `offset`, or NO_OFFSET), fail (never written) or
        info (unknown), the last two without an offset; `txn`: the producer's transaction it was
        sent in."""
        _check_offset(producer, seq, outcome, offset)
        if any(r["producer"] == producer and r["seq"] == seq for r in self.rows.get("sends", [])):
            warnings.warn(f"a second send row for producer {producer} seq {seq}: each value is "
                          "sent "
                          "once (docs/history-format.md), so the analyzer takes this as a producer "
                          "bug", stacklevel=2)
        return self._add("sends",
                         {"producer": producer, "seq": seq, "key": None, "topic": self.topic,
                          "partition": partition, "t_invoke": self.t,
                          "t_complete": self.t + took_ns, "outcome": outcome,
                          "error": None if outcome == "ok" else error,
                          "offset": NO_OFFSET if offset is None else offset, "txn": txn})

    def transaction(self, producer: int, txn: int, fate: Fate | str,
                    asked_commit: bool = True) -> HistoryBuilder:
        """How one of a producer's transactions ended (committed, aborted, unknown), stamped now;
        `asked_commit`: its producer called commit (now) before learning the fate."""
        return self._add("txns",
                         {"producer": producer, "txn": txn, "t_begin": self.t - self.step_ns,
                          "t_commit": self.t if asked_commit else NO_COMMIT,
                          "t_end": self.t + self.step_ns, "fate": str(fate), "error": ""})

    def read(self, reader: str, partition: int, offset: int, producer: int, seq: int,
             poll: int | None = None, phase: str | None = None,
             checksum_ok: bool = True) -> HistoryBuilder:
        """One record a reader returned, in a poll of its own unless `poll` names one (records added
        to one poll keep the order they are added in); the reader `drain` reads in the `final`
        phase, every other one `live`."""
        poll = self.polls.get(reader, 0) + 1 if poll is None else poll
        self.polls[reader] = max(self.polls.get(reader, 0), poll)
        pos = self.in_poll.get((reader, poll), 0)
        self.in_poll[(reader, poll)] = pos + 1
        return self._add("reads",
                         {"reader": reader,
                          "phase": phase or ("final" if reader == "drain" else "live"),
                          "poll": poll, "t": self.t, "topic": self.topic, "partition": partition,
                          "offset": offset, "producer": producer, "seq": seq,
                          "checksum_ok": checksum_ok, "pos": pos})

    def poll(self, reader: str, *records: tuple[int, int, int, int],
             phase: str | None = None) -> HistoryBuilder:
        """One poll of `reader` that returned `records`, each (partition, offset, producer, seq), in
        this order."""
        number = self.polls.get(reader, 0) + 1
        for partition, offset, producer, seq in records:
            self.read(reader, partition, offset, producer, seq, poll=number, phase=phase)
        return self

    def replica(self, broker: int, partition: int, offset: int, producer: int, seq: int,
                leader_epoch: int = 0, batch: tuple[int, int] | None = None) -> HistoryBuilder:
        """One record in one broker's copy of a partition, after the run healed; `batch`: its
        batch's producer id and epoch."""
        pid, epoch = batch or (None, None)
        return self._add("replicas", {"broker": broker, "topic": self.topic, "partition": partition,
                                      "offset": offset, "leader_epoch": leader_epoch,
                                      "producer": producer, "seq": seq, "checksum_ok": True,
                                      "producer_id": pid, "producer_epoch": epoch})

    def isr(self, partition: int, brokers: list[int], leader: int | None = None) -> HistoryBuilder:
        """One sample of a partition's ISR (and leader: the first of them unless given), as the
        metadata sampler takes it; the last sample is the ISR the run ended with."""
        return self._add("metadata", {"t": self.t, "topic": self.topic, "partition": partition,
                                      "leader": brokers[0] if leader is None else leader,
                                      "isr": ",".join(map(str, brokers)), "controller": -1})

    def event(self, source: str, kind: str, partition: int = NO_PARTITION, offset: int = NO_OFFSET,
              detail: str = "", topic: str | None = None) -> HistoryBuilder:
        """One `events` row (kinds: contracts.history.Event), about the builder's topic unless
        `topic` is given."""
        return self._add("events",
                         {"t": self.t, "source": source, "kind": kind, "topic": topic or self.topic,
                                    "partition": partition, "offset": offset, "detail": detail})

    def fault(self, fault: str, targets: list[int], outcome: str = "fired", line: int = 0,
              hold_ns: int = 1000 * MS, **detail: Any) -> HistoryBuilder:
        """One planned fault op and how it ended (contracts.history.Outcome); `detail` is what it
        did."""
        self._add("faults", {"t_start": self.t, "t_end": self.t + hold_ns, "fault": fault,
                             "targets": ",".join(map(str, targets)), "detail": json.dumps(detail),
                             "line": line, "planned": self.t, "outcome": outcome})
        self.t += hold_ns
        return self

    def drain_end(self, partition: int, end: int, reached: bool = True,
                  topic: str | None = None) -> HistoryBuilder:
        """The final read's end offset of a partition, and whether it got there."""
        return self.event("drain", Event.FINAL_END, partition, end,
                          "reached" if reached else "not-reached", topic)

    def drain_start(self, partition: int, start: int,
                    topic: str | None = None) -> HistoryBuilder:
        """A partition's log start offset when the final read ended (below it, retention
        deleted)."""
        return self.event("drain", Event.FINAL_START, partition, start, topic=topic)

    def retention(self, ms: int, bytes_: int, record_bytes_max: int,
                  topic: str | None = None) -> HistoryBuilder:
        """The topic's retention.ms and retention.bytes (-1: none), and a bound on one record's
        bytes in a segment."""
        kept = Retention(ms, bytes_, record_bytes_max)
        return self.event("runner", Event.TOPIC_CONFIG, detail=kept.detail(), topic=topic)

    def copy(self, partition: int, offset: int, in_offset: int,
             in_partition: int | None = None) -> HistoryBuilder:
        """The read_committed drain of the eos-copy output found the copy of input record
        (`in_partition`, by default the same partition, `in_offset`) at `offset` of `partition`."""
        in_p = partition if in_partition is None else in_partition
        return self._add("reads", {"reader": "drain", "phase": "final", "poll": 1, "t": self.t,
                                   "topic": copy_topic(self.topic), "partition": partition,
                                   "offset": offset, "producer": COPY_BASE + in_p, "seq": in_offset,
                                   "checksum_ok": True})

    def copy_committed(self, partition: int, offset: int, end: int) -> HistoryBuilder:
        """The eos-copy group's final committed input offset of a partition, and the input's end
        offset then."""
        return self.event("chaos-copy", Event.COPY_COMMITTED, partition, offset, str(end))

    def share_poll(self, reader: str, *records: tuple[int, int, int, int, int, str],
                   outcome: str | None = "ok") -> HistoryBuilder:
        """One poll of share consumer `reader` that processed `records`, each (partition, offset,
        producer, seq, delivery count, ack), then acknowledged them (`share_acked`); `outcome` None:
        the member died before it sent them."""
        number = self.polls.get(reader, 0) + 1
        self.polls[reader] = number
        phase = "final" if reader == "share-drain" else "live"
        for partition, offset, producer, seq, delivery, ack in records:
            self._add("shares", {"reader": reader, "phase": phase, "poll": number, "t": self.t,
                                 "topic": self.topic, "partition": partition, "offset": offset,
                                 "producer": producer, "seq": seq, "checksum_ok": True,
                                 "delivery": delivery, "ack": ack})
        if outcome is None:
            return self
        return self.share_acked(reader, sorted({r[0] for r in records}), outcome)

    def share_acked(self, reader: str, partitions: list[int],
                    outcome: str = "ok") -> HistoryBuilder:
        """The acknowledgements of `reader`'s last poll went out (`sent`), then ended with
        `outcome` (ok or fail) in each of `partitions`."""
        poll = self.polls[reader]
        for result, partition in [(AckOutcome.SENT, NO_PARTITION),
                                  *((outcome, p) for p in partitions)]:
            self._add("share_acks", {"reader": reader, "poll": poll, "topic": self.topic,
                                     "partition": partition, "t": self.t, "outcome": str(result),
                                     "error": None})
        return self

    def share_state(self, partition: int, start: int, lag: int, limit: int = 5,
                    group: str = "chaos-share") -> HistoryBuilder:
        """A share-partition's start offset and lag once the share group's final member idled."""
        return self.event(group, Event.SHARE_START, partition, start,
                          ShareState(lag, limit).detail())

    def replicas_dumped(self) -> HistoryBuilder:
        """Say that `replicas` holds every broker's copy (without it lost writes are judged from
        reads only)."""
        return self.event("runner", Event.REPLICAS_DUMPED)

    def drop(self, table: str, **match: Any) -> HistoryBuilder:
        """Remove the rows of a table that match every given column."""
        self.rows[table] = [r for r in self.rows.get(table, [])
                            if any(r.get(k) != v for k, v in match.items())]
        return self

    def write(self, directory: Path, compact: bool = True) -> Path:
        """Lay the rows out as a history directory (Parquet, or JSON Lines with `compact=False`)."""
        writer = HistoryWriter(directory, flush_s=60)
        for table, rows in self.rows.items():
            writer.write_many(table, rows)
        writer.close(compact=compact)
        return directory

    def write_run(self, run_dir: Path, scenario: dict[str, Any]) -> Path:
        """A run directory `kchaos analyze` checks: RUN_DIR/history and RUN_DIR/scenario.json, the
        settings the guarantee model judges by (a scenario file's fields; validated first)."""
        settings = validate(scenario, "scenario")
        self.write(run_dir / "history")
        (run_dir / "scenario.json").write_text(settings.model_dump_json(indent=1, by_alias=True))
        return run_dir


def _check_offset(producer: int, seq: int, outcome: str, offset: int | None) -> None:
    """An ok send names its offset (NO_OFFSET for an ack without one); a fail or info send has
    none."""
    if outcome == "ok" and offset is None:
        raise ValueError(f"send(producer={producer}, seq={seq}) is ok but has no offset: pass "
                         "offset=, or NO_OFFSET for an ack without one")
    if outcome != "ok" and offset not in (None, NO_OFFSET):
        raise ValueError(f"send(producer={producer}, seq={seq}, outcome={outcome!r}) got "
                         f"offset={offset}: only an ok send has an offset; leave it out")
