"""A transactional producer (KIP-98): transactions of 1 to N sends across partitions, each committed
or aborted on purpose, every send tagged with its transaction and every transaction's fate recorded
as its producer learned it."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TypeVar

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from contracts.history import NO_COMMIT, NO_OFFSET, NO_PARTITION, Event, Fate, HistoryWriter, now_ns
from contracts.payload import encode
from contracts.scenario import ProducerSpec, transactional_id
from workloads.producer import RECREATE_EVERY_S, RELEASE_S, RequestStats, producer_config
from workloads.worker import CallWatch, Worker

T = TypeVar("T")
# one init/commit/abort call's timeout; a retriable error repeats it until the transaction timeout
CALL_S = 10.0


class Unfinished(Exception):
    """The transaction's fate is unknown: its producer must be replaced (init_transactions fences
    it)."""


def transactional_config(spec: ProducerSpec, bootstrap: str, pid: int) -> dict:
    """librdkafka settings of a transactional producer: its scenario's, a transactional.id per
    producer kept across restarts (a new instance fences the old one), and the transaction
    timeout."""
    return producer_config(spec, bootstrap, f"chaos-txn-producer-{pid}") | {
        "transactional.id": transactional_id(pid),
        "transaction.timeout.ms": spec.transaction_timeout_ms}


def record_protocol(history: HistoryWriter, source: str, topic: str, txn: int) -> None:
    """A transactional client's protocol, from its first transaction on: librdkafka implements no
    KIP-890 (confluentinc/librdkafka#5423), so always v1."""
    history.event(source, Event.TXN_PROTOCOL, topic=topic, offset=txn, detail="v1")


def call_retrying(fn: Callable[[float], None], timeout_ms: int, watch: CallWatch,
                  what: str = "") -> None:
    """Call a transactional API under `watch`, repeating it on retriable errors until the
    transaction timeout (then Unfinished); other errors are raised."""
    deadline = time.monotonic() + timeout_ms / 1000
    while True:
        try:
            with watch(what or fn.__name__, CALL_S):
                fn(CALL_S)
            return
        except KafkaException as exc:
            err = exc.args[0]
            if not (isinstance(err, KafkaError) and err.retriable()):
                raise
            if time.monotonic() >= deadline:
                raise Unfinished(f"{what or fn.__name__}: still {err.name()} after the transaction "
                                 "timeout") from exc


def recreating(worker: Worker, start: Callable[[], T | None], step: Callable[[T], None],
               release: Callable[[T], None], fatal: Callable[[str], None]) -> None:
    """Run `step` on a client from `start` until the worker is stopped; a fatal error or a
    transaction of unknown fate (KafkaException, Unfinished) goes to `fatal` and the client is
    replaced, at most once every RECREATE_EVERY_S."""
    client: T | None = None
    started = -RECREATE_EVERY_S
    try:
        while not worker._stop.is_set():
            if client is None:
                if worker._stop.wait(max(0.0, started + RECREATE_EVERY_S - time.monotonic())):
                    break
                client, started = start(), time.monotonic()
                continue
            try:
                step(client)
            except (Unfinished, KafkaException) as exc:
                fatal(str(exc))
                release(client)
                client = None
    finally:
        if client is not None:
            release(client)


def transaction(producer: Producer, body: Callable[[], None], abort: bool, row: dict,
                call: Callable[[Callable[[float], None]], None]) -> None:
    """Begin a transaction, run `body` (its sends), then abort it (its records flushed first, as an
    application's would be, so readers meet them) or commit it; `row` gets its fate. An abortable
    error aborts it (the documented answer); any other error, or a call that kept failing
    (Unfinished), leaves its fate unknown and is raised."""
    row["fate"] = Fate.UNKNOWN.value
    try:
        producer.begin_transaction()
        body()
        if abort:
            producer.flush(CALL_S)
            call(producer.abort_transaction)
            row |= {"fate": Fate.ABORTED.value, "error": ""}
        else:
            row["t_commit"] = now_ns()
            call(producer.commit_transaction)
            row |= {"fate": Fate.COMMITTED.value, "error": ""}
    except KafkaException as exc:
        err = exc.args[0]
        if not (isinstance(err, KafkaError) and err.txn_requires_abort()):
            row["error"] = str(exc)
            raise
        call(producer.abort_transaction)
        row |= {"fate": Fate.ABORTED.value, "error": err.name()}
    except Unfinished as exc:
        row["error"] = str(exc)
        raise


class TxnProducerClient(Worker):
    """One transactional producer thread; a fatal error or an unknown fate replaces its producer
    instance."""

    def __init__(self, pid: int, spec: ProducerSpec, topics: tuple[str, ...], partitions: int,
                 bootstrap: str, history: HistoryWriter, first: int = 0) -> None:
        """`first`: the seq of its first send and the number of its first transaction."""
        super().__init__(f"producer-{pid}")
        self.pid, self.spec, self.topics, self.partitions = pid, spec, topics, partitions
        self.bootstrap, self.history = bootstrap, history
        self.seq = self.txn = self.first = first
        self.acked = self.errors = 0
        self._rng = random.Random(pid)
        # seq -> (t_invoke, txn, topic) awaiting a report
        self._pending: dict[int, tuple[int, int, str]] = {}
        self._stats = RequestStats(history, f"producer-{pid}", topics[0])

    def _event(self, kind: Event, detail: str) -> None:
        self.history.event(f"producer-{self.pid}", kind, topic=self.topics[0], detail=detail)

    def _run(self) -> None:
        next_at = time.monotonic()

        def step(producer: Producer) -> None:
            nonlocal next_at
            sent = self._transaction(producer)
            next_at += sent / self.spec.rate if self.spec.rate > 0 else 0.0
            self._stop.wait(max(0.0, next_at - time.monotonic()))
            next_at = max(next_at, time.monotonic() - 1.0)
        try:
            recreating(self, self._start, step, self._release,
                       lambda err: self._event(Event.FATAL, err))
        finally:
            self._settle_pending()

    def _start(self) -> Producer | None:
        """A new instance with its transactions initialised (None, recorded, if that failed)."""
        producer = Producer(transactional_config(self.spec, self.bootstrap, self.pid)
                            | self._stats.config())
        try:
            self._call(producer.init_transactions)
        except (Unfinished, KafkaException) as exc:
            self._event(Event.CLIENT_ERROR, f"init_transactions: {exc}")
            self._release(producer)
            return None
        if self.txn != self.first:
            self._event(Event.RECREATED, "after a fatal error or a transaction of unknown fate")
        else:
            record_protocol(self.history, f"producer-{self.pid}", self.topics[0], self.txn)
        return producer

    def _call(self, fn: Callable[[float], None]) -> None:
        call_retrying(fn, self.spec.transaction_timeout_ms, self.watch)

    def _transaction(self, producer: Producer) -> int:
        """Begin, send, then commit or abort one transaction; record its fate; returns how many
        sends it had."""
        n, abort = self._rng.randint(
            1, self.spec.txn_sends), self._rng.random() < self.spec.abort_ratio
        txn, row = self.txn, {"producer": self.pid, "txn": self.txn, "t_begin": now_ns(),
                              "t_commit": NO_COMMIT}
        self.txn += 1

        def sends() -> None:
            for _ in range(n):
                self._send(producer, txn)
            if self.spec.txn_open_ms:  # the application's processing, its sends acknowledged
                producer.flush(CALL_S)
                self._stop.wait(self.spec.txn_open_ms / 1000)
        try:
            transaction(producer, sends, abort, row, self._call)
        finally:
            self.history.write("txns", row | {"t_end": now_ns()})
            producer.poll(0)
        return n

    def _send(self, producer: Producer, txn: int) -> None:
        """One send of the open transaction, to a topic and partition drawn at random (a transaction
        spans partitions, and topics too with `txn_topics: 2`)."""
        seq, self.seq = self.seq, self.seq + 1
        t0 = now_ns()
        topic = self._rng.choice(self.topics)
        self._pending[seq] = (t0, txn, topic)
        while True:
            try:
                producer.produce(topic, encode(self.pid, seq, self.spec.payload_bytes),
                                 partition=self._rng.randrange(self.partitions),
                                 on_delivery=self._delivered(seq))
                return
            except BufferError:
                producer.poll(0.05)

    def _delivered(self, seq: int) -> Callable[[KafkaError | None, Message], None]:
        def report(err: KafkaError | None, msg: Message) -> None:
            t0, txn, topic = self._pending.pop(seq)
            ok = err is None
            self.acked += ok
            self.errors += not ok
            offset, partition = msg.offset(), msg.partition()
            self.history.write("sends",
                               self._row(seq, txn, topic,
                                         NO_PARTITION if partition is None else partition, t0,
                                         "ok" if ok else "info", None if ok else err.name(),
                                         NO_OFFSET if offset is None else offset))
        return report

    def _row(self, seq: int, txn: int, topic: str, partition: int, t0: int, outcome: str,
             error: str | None, offset: int = NO_OFFSET) -> dict:
        return {"producer": self.pid, "seq": seq, "key": None, "topic": topic,
                "partition": partition, "t_invoke": t0, "t_complete": now_ns(), "outcome": outcome,
                "error": error, "offset": offset, "txn": txn}

    def _release(self, producer: Producer) -> None:
        """Serve what is still reported, purge the rest and serve those reports too, before the
        instance goes (a producer destroyed with messages left calls back into Python during
        interpreter shutdown)."""
        try:
            producer.flush(RELEASE_S)
            producer.purge()
            producer.flush(RELEASE_S)
        except Exception as exc:  # noqa: BLE001 - what stays unreported is settled as `info`
            self._event(Event.CLIENT_ERROR, f"{type(exc).__name__}: {exc}")

    def _settle_pending(self) -> None:
        """Sends without a delivery report: `info` (they may have been written; their transaction
        decides)."""
        for seq, (t0, txn, topic) in sorted(self._pending.items()):
            self.history.write(
                "sends", self._row(seq, txn, topic, NO_PARTITION, t0, "info", "NO_DELIVERY_REPORT"))
        self._pending.clear()
