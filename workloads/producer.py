"""A producer client: sends each (producer, seq) exactly once and records how every send ended."""

from __future__ import annotations

import os
import time

import orjson
from confluent_kafka import KafkaError, KafkaException, Message, Producer

from contracts.clientlog import QUIET
from contracts.history import (
    NO_OFFSET,
    NO_PARTITION,
    NO_TXN,
    Event,
    HistoryWriter,
    now_ns,
    row_format,
)
from contracts.payload import encode, seq_of
from contracts.scenario import ProducerSpec
from workloads.worker import Worker

MAX_QUEUED = 20_000
MAX_CLIENT_ERRORS = 100
RELEASE_S = 2.0  # how long a producer being dropped may take to report what it purged
RECREATE_EVERY_S = 1.0  # at most one new producer a second, whatever a broker keeps answering
# sends per produce_batch call when unthrottled; delivery reports are served after each call
BATCH = 64
STATS_MS = 5000  # how often librdkafka reports its counters to RequestStats
# ours: librdkafka's per broker
COUNTERS = {"timed_out": "req_timeouts", "retried": "txretries", "errors": "txerrs"}


def producer_config(spec: ProducerSpec, bootstrap: str, client_id: str) -> dict:
    """librdkafka settings for a scenario's producer; retries stay inside the client, never above
    it."""
    timeout = ({"socket.timeout.ms": spec.socket_timeout_ms} if spec.socket_timeout_ms is not None
               else {})
    return timeout | {
        "bootstrap.servers": bootstrap,
        "client.id": client_id,
        "acks": spec.acks,
        "enable.idempotence": spec.idempotence,
        "retries": spec.retries,
        "max.in.flight.requests.per.connection": spec.max_in_flight,
        "linger.ms": spec.linger_ms,
        "batch.size": spec.batch_size,
        "compression.type": spec.compression,
        "message.timeout.ms": spec.message_timeout_ms,
        "request.timeout.ms": spec.request_timeout_ms,
        "socket.connection.setup.timeout.ms": 5000,
        "reconnect.backoff.max.ms": 1000,
        "log_level": 0,  # client logs would drown the progress line; outcomes are in the history
        # librdkafka prints fatal errors even at log_level 0: they are history events instead
        "logger": QUIET,
    }


class RequestStats:
    """librdkafka's statistics callback for one producer: each handle's requests timed out, retried
    and failed in transmission, summed over its brokers, recorded as a `requests` event whenever
    they moved."""

    def __init__(self, history: HistoryWriter, source: str, topic: str) -> None:
        self.history, self.source, self.topic = history, source, topic
        self._last: dict[str, dict] = {}

    def config(self) -> dict:
        """The librdkafka settings that deliver the statistics here."""
        return {"statistics.interval.ms": STATS_MS, "stats_cb": self}

    def __call__(self, stats_json: str) -> None:
        stats = orjson.loads(stats_json)
        brokers = stats.get("brokers", {}).values()
        # handle names repeat in a restarted process
        handle = f"{os.getpid()}/{stats.get('name', '')}"
        now = {"handle": handle,
               **{k: sum(b.get(f, 0) for b in brokers) for k, f in COUNTERS.items()}}
        if now != self._last.get(handle):
            self._last[handle] = now
            self.history.event(self.source, Event.REQUESTS, topic=self.topic,
                               detail=orjson.dumps(now).decode())


class ProducerClient(Worker):
    """One producer thread: rate-limited sends, outcomes from delivery reports, recreation after
    fatal errors."""

    def __init__(self, pid: int, spec: ProducerSpec, topic: str, bootstrap: str,
                 history: HistoryWriter, first: int = 0) -> None:
        """`first`: the seq of its first send."""
        super().__init__(f"producer-{pid}")
        self.pid, self.spec, self.topic = pid, spec, topic
        self.bootstrap, self.history = bootstrap, history
        self.seq = first
        self.acked = 0
        self.errors = 0
        # seq -> t_invoke of the sends awaiting a delivery report
        self._pending: dict[int, int] = {}
        # An `ok` send's row, encoded once but for seq, key, partition, t_invoke, t_complete and
        # offset
        self._ok_line = row_format("sends",
                                   {"producer": pid, "topic": topic, "outcome": "ok", "error": None,
                                               "txn": NO_TXN})
        self._keys_json = [orjson.dumps(self._key(seq)) for seq in range(16)]  # by seq % 16
        self._write_ok = history.line_writer("sends")
        self._stats = RequestStats(history, f"producer-{pid}", topic)

    def _new_producer(self) -> Producer:
        return Producer(producer_config(self.spec, self.bootstrap, f"chaos-producer-{self.pid}")
                        | self._stats.config())

    def _event(self, kind: Event, detail: str) -> None:
        self.history.event(f"producer-{self.pid}", kind, topic=self.topic, detail=detail)

    def _run(self) -> None:
        producer = self._new_producer()
        try:
            producer = self._produce(producer)
        finally:
            self._close(producer)
            self._release(producer)
            self._settle_pending()

    def _produce(self, producer: Producer) -> Producer:
        """Send at the scenario's rate until stopped; returns the producer in use (recreated after
        fatal errors)."""
        interval = 1.0 / self.spec.rate if self.spec.rate > 0 else 0.0
        next_at = time.monotonic()
        client_errors = 0
        fatal = False
        recreated = -RECREATE_EVERY_S
        while not self._stop.is_set():
            try:
                if fatal:
                    self._close(producer)
                    self._release(producer)
                    if self._stop.wait(max(0.0, recreated + RECREATE_EVERY_S - time.monotonic())):
                        break
                    producer, recreated = self._new_producer(), time.monotonic()
                    fatal = False
                    self._event(Event.RECREATED, "after a fatal error")
                due = BATCH
                if interval:
                    late = time.monotonic() - next_at
                    if late < 0:
                        producer.poll(min(-late, 0.05))
                        continue
                    due = min(BATCH, 1 + int(late / interval))
                    next_at = max(next_at + due * interval, time.monotonic() - 1.0)
                while len(producer) >= MAX_QUEUED and not self._stop.is_set():
                    producer.poll(0.05)
                self._send(producer, due)
                producer.poll(0)
            except Exception as exc:  # noqa: BLE001 - a client error must not end the workload silently
                # confluent-kafka raises a fatal error (e.g. an idempotent producer's
                # OUT_OF_ORDER_SEQUENCE_NUMBER) from poll or produce, not through error_cb; the
                # instance refuses every send after it
                err = exc.args[0] if isinstance(exc, KafkaException) and exc.args else None
                if isinstance(err, KafkaError) and err.fatal():
                    fatal = True
                    self._event(Event.FATAL, f"{err.name()}: {err.str()}")
                    continue
                client_errors += 1
                self._event(Event.CLIENT_ERROR, f"{type(exc).__name__}: {exc}")
                if client_errors >= MAX_CLIENT_ERRORS:
                    self._event(Event.STOPPED, f"after {client_errors} client errors")
                    break
        return producer

    def _send(self, producer: Producer, count: int) -> None:
        """Hand `count` sends to the client in one produce_batch call; their invoke time is that
        call's."""
        pid, size, first = self.pid, self.spec.payload_bytes, self.seq
        self.seq += count
        seqs = range(first, self.seq)
        t0 = now_ns()
        batch = [{"value": encode(pid, seq, size)} for seq in seqs]
        if self.spec.keyed:
            for seq, msg in zip(seqs, batch, strict=True):
                msg["key"] = self._key(seq)
        self._pending.update(dict.fromkeys(seqs, t0))
        # If the call itself raises, which sends it enqueued is unknown: they stay pending, and each
        # ends with its delivery report or, without one, as `info` at the end.
        producer.produce_batch(self.topic, batch, on_delivery=self._delivered)
        refused = [(seq, msg["_error"]) for seq,
                   msg in zip(seqs, batch, strict=True) if "_error" in msg]
        if refused:
            self.errors += len(refused)
            t1 = now_ns()
            for seq, _ in refused:
                del self._pending[seq]
            self.history.write_many("sends",
                                    [self._row(seq, NO_PARTITION, t0, t1, "fail", err.name())
                                              for seq, err in refused])

    def _delivered(self, err: KafkaError | None, msg: Message) -> None:
        """Every send's delivery report, its seq read back from its value: `ok` without error,
        otherwise `info` (it may have been written). Message.offset() and .partition() are None when
        librdkafka has none (-1)."""
        seq = seq_of(msg.value())
        t0, offset = self._pending[seq], msg.offset()
        if err is None and offset is not None:
            self.acked += 1
            self._write_ok(self._ok_line
                           % (seq, self._keys_json[seq % 16], msg.partition(), t0, now_ns(),
                              offset))
        # an error, or acked without an offset (acks=0; also seen for idempotent sends after a
        # failover)
        else:
            ok = err is None
            self.acked += ok
            self.errors += not ok
            partition = msg.partition()
            self.history.write("sends",
                               self._row(seq, NO_PARTITION if partition is None else partition, t0,
                                         now_ns(), "ok" if ok else "info",
                                         None if ok else err.name()))
        del self._pending[seq]  # only once its row is queued: a send never ends without one

    def _key(self, seq: int) -> str | None:
        return f"{self.pid}-{seq % 16}" if self.spec.keyed else None

    def _row(self, seq: int, partition: int, t0: int, t1: int, outcome: str,
             error: str | None) -> dict:
        """A send row without an offset."""
        return {"producer": self.pid, "seq": seq, "key": self._key(seq), "topic": self.topic,
                "partition": partition, "t_invoke": t0, "t_complete": t1, "outcome": outcome,
                "error": error, "offset": NO_OFFSET, "txn": NO_TXN}

    def _settle_pending(self) -> None:
        """Sends enqueued whose delivery report never came (client crash, unflushed at the end):
        `info`, since they may have been written; without a row their values would read as
        `unexpected`."""
        for seq, t0 in sorted(self._pending.items()):
            self.history.write(
                "sends", self._row(seq, NO_PARTITION, t0, now_ns(), "info", "NO_DELIVERY_REPORT"))
        self._pending.clear()

    def _release(self, producer: Producer) -> None:
        """Purge what the client still holds and serve those delivery reports now (each ends
        `info`): a client destroyed later with messages left calls back into Python while the
        interpreter shuts down, and crashed."""
        try:
            producer.purge()
            producer.flush(RELEASE_S)
        except Exception as exc:  # noqa: BLE001 - what stays unreported is settled as `info`
            self._event(Event.CLIENT_ERROR, f"{type(exc).__name__}: {exc}")

    def _close(self, producer: Producer) -> None:
        """Wait for outstanding delivery reports (each ends ok or info by message.timeout.ms)."""
        deadline = time.monotonic() + self.spec.message_timeout_ms / 1000 + 10
        try:
            while len(producer) and time.monotonic() < deadline:
                producer.flush(1.0)
        except Exception as exc:  # noqa: BLE001 - what stays unreported is settled as `info`
            self._event(Event.CLIENT_ERROR, f"{type(exc).__name__}: {exc}")
        if len(producer):
            self._event(Event.UNFLUSHED, f"{len(producer)} sends without a delivery report")
