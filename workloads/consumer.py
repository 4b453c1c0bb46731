"""Live consumers: group members (subscribe) or assign-mode readers, recording every record and
rebalance."""

from __future__ import annotations

import contextlib

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

from contracts.clientlog import QUIET
from contracts.history import Event, HistoryWriter, now_ns
from contracts.payload import decode
from contracts.scenario import ConsumerSpec
from workloads.worker import Worker

BATCH = 500


def consumer_config(bootstrap: str, group: str, isolation: str, auto_commit: bool) -> dict:
    """librdkafka consumer settings shared by live readers and the final drain."""
    return {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": auto_commit,
        # a position is stored only once its reads are in the history
        "enable.auto.offset.store": False,
        "isolation.level": isolation,
        "session.timeout.ms": 10000,
        "heartbeat.interval.ms": 1000,
        "socket.connection.setup.timeout.ms": 5000,
        "reconnect.backoff.max.ms": 1000,
        "enable.partition.eof": False,
        "log_level": 0,  # client logs would drown the progress line; outcomes are in the history
        # librdkafka prints fatal errors even at log_level 0: they are history events instead
        "logger": QUIET,
    }


def group_settings(spec: ConsumerSpec) -> dict:
    """The group protocol a member speaks: classic with its assignor, or KIP-848's (the broker
    assigns, and the session and heartbeat are the broker's to set: None removes a setting)."""
    if spec.group_protocol == "consumer":
        return {"group.protocol": "consumer", "session.timeout.ms": None,
                "heartbeat.interval.ms": None}
    return {"partition.assignment.strategy": spec.assignor}


# A live member reads at the producers' rate; after a failover librdkafka would pre-fetch up to 64
# MiB (queued.max.messages.kbytes) and 100,000 records a partition while it catches up, a peak its
# memory then keeps.
PREFETCH = {"queued.max.messages.kbytes": 8192, "queued.min.messages": 10000}


def member_config(spec: ConsumerSpec, cid: int, bootstrap: str) -> dict:
    """A live group member's librdkafka settings (a setting its protocol leaves to the broker is
    dropped)."""
    conf = consumer_config(bootstrap, spec.group, spec.isolation_of(cid),
                           spec.commit == "auto") | group_settings(spec)
    conf["auto.offset.reset"] = spec.reset
    conf |= PREFETCH
    return {k: v for k, v in conf.items() if v is not None}


def read_rows(reader: str, phase: str, poll: int, msgs: list, t: int | None = None) -> list[dict]:
    """History rows for one poll's records (errors and foreign values included, so `unexpected` can
    see them), stamped `t` (by default now)."""
    t = now_ns() if t is None else t
    rows = []
    for pos, m in enumerate(msgs):
        if m.error():
            continue
        d = decode(m.value())
        rows.append({"reader": reader, "phase": phase, "poll": poll, "t": t, "topic": m.topic(),
                     "partition": m.partition(), "offset": m.offset(),
                     "producer": d.producer if d else -1, "seq": d.seq if d else -1,
                     "checksum_ok": bool(d and d.checksum_ok), "pos": pos})
    return rows


def reader_name(cid: int) -> str:
    """The `reader` a live consumer writes into the history."""
    return f"consumer-{cid}"


class ConsumerClient(Worker):
    """One live consumer thread."""

    positions_itself = True

    def __init__(self, cid: int, spec: ConsumerSpec, topics: tuple[str, ...], partitions: int,
                 bootstrap: str, history: HistoryWriter) -> None:
        self.name = reader_name(cid)
        super().__init__(self.name)
        self.cid, self.spec, self.topics, self.partitions = cid, spec, topics, partitions
        self.bootstrap, self.history = bootstrap, history

    def _event(self, kind: Event, parts: list[TopicPartition]) -> None:
        for tp in parts:
            self.history.event(self.name, kind, topic=tp.topic, partition=tp.partition,
                               offset=tp.offset)

    def _assigned(self, _consumer: Consumer, parts: list[TopicPartition]) -> None:
        self._event(Event.ASSIGN, parts)
        self.positioned.set()

    def _run(self) -> None:
        consumer = Consumer(member_config(self.spec, self.cid, self.bootstrap))
        if self.spec.mode == "assign":
            parts = [TopicPartition(t, p, OFFSET_BEGINNING) for t in self.topics
                     for p in range(self.partitions)]
            consumer.assign(parts)
            self._event(Event.ASSIGN, parts)
            self.positioned.set()
        else:
            consumer.subscribe(list(self.topics), on_assign=self._assigned,
                               on_revoke=lambda c, ps: self._event(Event.REVOKE, ps),
                               on_lost=lambda c, ps: self._event(Event.LOST, ps))
        poll = 0
        try:
            while not self._stop.is_set():
                msgs = consumer.consume(BATCH, timeout=0.2)
                if not msgs:
                    continue
                poll += 1
                grouped = self.spec.mode == "subscribe"
                if grouped and self.spec.commit == "before":
                    # at-most-once: a crash now loses this batch
                    self._save_positions(consumer, msgs)
                rows = read_rows(self.name, "live", poll, msgs)
                self.history.write_many("reads", rows)
                if grouped and self.spec.commit != "before":
                    # at-least-once: the reads are recorded before the positions move
                    self.history.flush()
                    self._save_positions(consumer, msgs)
        finally:
            consumer.close()

    def _save_positions(self, consumer: Consumer, msgs: list) -> None:
        """Store (auto: committed in the background) or commit (after: async; before: sync) the next
        offsets."""
        nxt: dict[tuple[str, int], int] = {}
        for m in msgs:
            if not m.error():
                nxt[m.topic(), m.partition()] = max(
                    nxt.get((m.topic(), m.partition()), -1), m.offset() + 1)
        offsets = [TopicPartition(t, p, o) for (t, p), o in nxt.items()]
        # a partition revoked meanwhile, or a coordinator on the move: the next owner re-reads
        # (at-least-once)
        with contextlib.suppress(KafkaException):
            if self.spec.commit == "auto":
                consumer.store_offsets(offsets=offsets)
            elif offsets:
                consumer.commit(offsets=offsets, asynchronous=self.spec.commit == "after")


def record_committed(bootstrap: str, group: str, topic: str, partitions: int,
                     history: HistoryWriter) -> None:
    """The group's committed positions once its members stopped (`committed` events; offset -1 =
    none)."""
    consumer = Consumer(consumer_config(bootstrap, group, "read_uncommitted", False))
    try:
        parts = consumer.committed([TopicPartition(topic, p) for p in range(partitions)],
                                   timeout=30)
        for tp in parts:
            history.event(group, Event.COMMITTED, topic=topic, partition=tp.partition,
                          offset=max(tp.offset, -1), detail=tp.error.name() if tp.error else "")
    except KafkaException as exc:  # recorded: the at-least-once check is then not established
        history.event(group, Event.COMMITTED_UNKNOWN, topic=topic, detail=str(exc))
    finally:
        consumer.close()
