"""The eos-copy stage (KIP-98, KIP-447): consume the input topic with read_committed, copy each
record, transformed to name its input position, to the same partition of the output topic, and
commit the input offsets in the same transaction; every transaction and copy goes into the
history."""

from __future__ import annotations

import random
import time
from collections.abc import Callable

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)

from contracts.clientlog import QUIET
from contracts.history import NO_COMMIT, NO_OFFSET, Event, Fate, HistoryWriter, now_ns
from contracts.payload import COPY_BASE, encode
from contracts.scenario import CopierSpec, copier_id, copy_topic
from workloads.consumer import consumer_config
from workloads.producer import RELEASE_S
from workloads.txn_producer import (
    CALL_S,
    Unfinished,
    call_retrying,
    record_protocol,
    recreating,
    transaction,
)
from workloads.worker import Worker

COPY_BYTES = 64


def copier_name(cid: int) -> str:
    """The `source` an eos-copy instance writes into the history's events."""
    return f"copier-{cid}"


def copier_config(spec: CopierSpec, bootstrap: str, cid: int) -> dict:
    """The instance's transactional producer: its transactional.id kept across restarts (a new one
    fences the old)."""
    return {"bootstrap.servers": bootstrap, "client.id": copier_name(cid),
            "transactional.id": copier_id(cid),
            "transaction.timeout.ms": spec.transaction_timeout_ms, "enable.idempotence": True,
            "acks": "all", "linger.ms": 5, "socket.connection.setup.timeout.ms": 5000,
            "reconnect.backoff.max.ms": 1000, "log_level": 0, "logger": QUIET}


class CopierClient(Worker):
    """One instance of the stage; a fatal error or a transaction of unknown fate replaces its
    producer and its consumer (the group then hands its partitions on from their committed
    offsets)."""

    def __init__(self, cid: int, spec: CopierSpec, topic: str, bootstrap: str,
                 history: HistoryWriter, first: int = 0) -> None:
        """`first`: the number of its first transaction."""
        self.name = copier_name(cid)
        super().__init__(self.name)
        self.cid, self.spec, self.topic, self.out = cid, spec, topic, copy_topic(topic)
        self.bootstrap, self.history = bootstrap, history
        self.txn = self.first = first
        self.acked = self.errors = 0
        self._rng = random.Random(cid)

    def _event(self, kind: Event, detail: str = "", parts: tuple[TopicPartition, ...] = ()) -> None:
        for tp in parts or (TopicPartition(self.topic, -1, NO_OFFSET),):
            self.history.event(self.name, kind, topic=tp.topic, partition=tp.partition,
                               offset=tp.offset, detail=detail)

    def _run(self) -> None:
        def step(clients: tuple[Consumer, Producer]) -> None:
            msgs = [m for m in clients[0].consume(self.spec.records, timeout=0.2) if not m.error()]
            if msgs:
                self._transaction(*clients, msgs)
        recreating(self, self._start, step, lambda clients: self._release(*clients),
                   lambda err: self._event(Event.FATAL, err))

    def _start(self) -> tuple[Consumer, Producer] | None:
        """A producer with its transactions initialised and a group member subscribed (None,
        recorded, if the producer could not be initialised)."""
        producer = Producer(copier_config(self.spec, self.bootstrap, self.cid))
        try:
            call_retrying(producer.init_transactions, self.spec.transaction_timeout_ms, self.watch)
        except (Unfinished, KafkaException) as exc:
            self._event(Event.CLIENT_ERROR, f"init_transactions: {exc}")
            producer.flush(RELEASE_S)
            return None
        consumer = Consumer(consumer_config(self.bootstrap, self.spec.group, "read_committed",
                                            False))
        consumer.subscribe([self.topic], on_assign=lambda c,
                           ps: self._event(Event.ASSIGN, parts=tuple(ps)), on_revoke=lambda c,
                           ps: self._event(Event.REVOKE, parts=tuple(ps)), on_lost=lambda c,
                           ps: self._event(Event.LOST, parts=tuple(ps)))
        if self.txn != self.first:
            self._event(Event.RECREATED, "after a fatal error or a transaction of unknown fate")
        else:
            record_protocol(self.history, self.name, self.topic, self.txn)
        return consumer, producer

    def _transaction(self, consumer: Consumer, producer: Producer, msgs: list[Message]) -> None:
        """Copy one batch in one transaction with its input offsets; commit it, or abort it (on
        purpose, or on an abortable error) and rewind to the committed offsets, as KIP-447's loop
        prescribes."""
        abort, txn = self._rng.random() < self.spec.abort_ratio, self.txn
        self.txn += 1
        row = {"copier": self.cid, "txn": txn, "t_begin": now_ns(), "t_commit": NO_COMMIT,
               "records": len(msgs)}

        def call(fn: Callable[[float], None], what: str = "") -> None:
            call_retrying(fn, self.spec.transaction_timeout_ms, self.watch, what)

        def copies() -> None:
            for m in msgs:
                self._copy(producer, txn, m)
            offsets = self._next(msgs)
            # the broken stage: offsets committed whatever the transaction does
            if self.spec.offsets == "outside":
                consumer.commit(offsets=offsets, asynchronous=False)
            else:
                meta = consumer.consumer_group_metadata()
                call(lambda t: producer.send_offsets_to_transaction(offsets, meta, t),
                     "send_offsets_to_transaction")
        try:
            transaction(producer, copies, abort, row, call)
        finally:
            self.history.write("copy_txns", row | {"t_end": now_ns()})
            producer.poll(0)
        if row["fate"] == Fate.ABORTED.value:
            self._rewind(consumer)

    def _next(self, msgs: list[Message]) -> list[TopicPartition]:
        """The input offsets after the batch, per partition."""
        nxt: dict[int, int] = {}
        for m in msgs:
            nxt[m.partition()] = max(nxt.get(m.partition(), 0), m.offset() + 1)
        return [TopicPartition(self.topic, p, o) for p, o in sorted(nxt.items())]

    def _copy(self, producer: Producer, txn: int, m: Message) -> None:
        """The transform: a value naming the input position, to the same partition of the output
        topic."""
        key = (m.partition(), m.offset())
        while True:
            try:
                producer.produce(self.out, encode(COPY_BASE + key[0], key[1], COPY_BYTES),
                                 partition=key[0], on_delivery=self._delivered(key, txn))
                return
            except BufferError:
                producer.poll(0.05)

    def _delivered(self, key: tuple[int, int], txn: int) -> Callable[
            [KafkaError | None, Message], None]:
        def report(err: KafkaError | None, msg: Message) -> None:
            self.acked += err is None
            self.errors += err is not None
            offset = msg.offset()
            self.history.write("copies", {
                "copier": self.cid, "txn": txn, "in_partition": key[0], "in_offset": key[1],
                "topic": self.out, "partition": key[0],
                "offset": NO_OFFSET if offset is None else offset,
                "outcome": "ok" if err is None else "info",
                "error": None if err is None else err.name(), "t": now_ns()})
        return report

    def _rewind(self, consumer: Consumer) -> None:
        """Back to the group's committed offsets, so an aborted batch is read and copied again
        (KAFKA-17582 is a consumer that did not); a seek that fails replaces the instance."""
        with self.watch("committed", CALL_S):
            parts = consumer.committed(consumer.assignment(), timeout=CALL_S)
        for tp in parts:
            consumer.seek(TopicPartition(tp.topic, tp.partition,
                                         tp.offset if tp.offset >= 0 else OFFSET_BEGINNING))
        self._event(Event.REWOUND, "after an abort", tuple(parts))

    def _release(self, consumer: Consumer, producer: Producer) -> None:
        """Leave the group and let the producer go; an open transaction is aborted by the
        coordinator (at the transaction timeout, or when the next instance with this
        transactional.id starts)."""
        for close in (lambda: producer.flush(RELEASE_S), producer.purge,
                      lambda: producer.flush(RELEASE_S), consumer.close):
            try:
                close()
            except Exception as exc:  # noqa: BLE001 - recorded; the instance is replaced either way
                self._event(Event.CLIENT_ERROR, f"{type(exc).__name__}: {exc}")


# committed offsets that hold still this long below the input's end: the stage is stuck
STALL_S = 20.0


def _progress(consumer: Consumer, topic: str, partitions: int) -> tuple[
        dict[int, int], dict[int, int]]:
    """The stage's committed input offsets (-1: none) and the input's end offsets, per partition."""
    parts = [TopicPartition(topic, p) for p in range(partitions)]
    committed = {tp.partition: max(tp.offset, -1)
                 for tp in consumer.committed(parts, timeout=CALL_S)}
    ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=CALL_S)[1]
            for p in range(partitions)}
    return committed, ends


def wait_copied(bootstrap: str, group: str, topic: str, partitions: int, timeout_s: float,
                tend: Callable[[], bool]) -> None:
    """Let the stage catch up once the producers stopped: until its committed offsets reach the
    input's ends, hold still for STALL_S, or `timeout_s` passes. `tend` runs every second and says
    whether it restarted a hung instance: a restart starts the stall clock again, since the group
    must first expire the hung member's session and rebalance (a member stuck in a call never
    rejoins, so the others wait without partitions until then)."""
    consumer = Consumer(consumer_config(bootstrap, group, "read_committed", False))
    deadline, last, since = time.monotonic() + timeout_s, None, time.monotonic()
    try:
        while time.monotonic() < deadline:
            if tend():
                since = time.monotonic()
            try:
                committed, ends = _progress(consumer, topic, partitions)
            except KafkaException:
                time.sleep(1.0)  # a coordinator or leader on the move: retry within the bound
                continue
            if all(committed[p] >= ends[p] for p in ends):
                return
            if committed != last:
                last, since = committed, time.monotonic()
            elif time.monotonic() - since >= STALL_S:
                return
            time.sleep(1.0)
    finally:
        consumer.close()


def record_copied(bootstrap: str, group: str, topic: str, partitions: int,
                  history: HistoryWriter) -> None:
    """The stage's final committed input offsets once its instances stopped (`copy-committed`
    events; detail: the input's end offset), or a `committed-unknown` event saying why they could
    not be read."""
    consumer = Consumer(consumer_config(bootstrap, group, "read_committed", False))
    try:
        committed, ends = _progress(consumer, topic, partitions)
        for p in range(partitions):
            history.event(group, Event.COPY_COMMITTED, topic=topic, partition=p,
                          offset=committed[p], detail=str(ends[p]))
    except KafkaException as exc:
        history.event(group, Event.COMMITTED_UNKNOWN, topic=topic, detail=str(exc))
    finally:
        consumer.close()
