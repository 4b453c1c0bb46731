"""A producer client: sends each (producer, seq) exactly once and records how every send ended."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from confluent_kafka import KafkaError, Message, Producer

from harness.history import HistoryWriter, now_ns
from harness.scenario import ProducerSpec
from workloads.payload import encode
from workloads.worker import Worker

MAX_QUEUED = 20_000
MAX_CLIENT_ERRORS = 100
BATCH = 64  # sends per produce_batch call when unthrottled; delivery reports are served after each call


def producer_config(spec: ProducerSpec, bootstrap: str, client_id: str) -> dict:
    """librdkafka settings for a scenario's producer; retries stay inside the client, never above it."""
    return {
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
    }


class ProducerClient(Worker):
    """One producer thread: rate-limited sends, outcomes from delivery reports, recreation after fatal errors."""

    def __init__(self, pid: int, spec: ProducerSpec, topic: str, bootstrap: str, history: HistoryWriter) -> None:
        super().__init__(f"producer-{pid}")
        self.pid, self.spec, self.topic, self.bootstrap, self.history = pid, spec, topic, bootstrap, history
        self.seq = 0
        self.acked = 0
        self.errors = 0
        self._fatal = threading.Event()
        self._pending: dict[int, tuple[int, str | None]] = {}  # seq -> (t_invoke, key) awaiting a delivery report

    def _new_producer(self) -> Producer:
        conf = producer_config(self.spec, self.bootstrap, f"chaos-producer-{self.pid}")
        conf["error_cb"] = self._on_error
        return Producer(conf)

    def _on_error(self, err: KafkaError) -> None:
        if err.fatal():
            self._event("fatal", err.name())
            self._fatal.set()

    def _event(self, kind: str, detail: str) -> None:
        self.history.write("events", {"t": now_ns(), "source": f"producer-{self.pid}", "kind": kind,
                                      "topic": self.topic, "partition": -1, "offset": -1, "detail": detail})

    def _run(self) -> None:
        producer = self._new_producer()
        try:
            producer = self._produce(producer)
        finally:
            self._close(producer)
            self._settle_pending()

    def _produce(self, producer: Producer) -> Producer:
        """Send at the scenario's rate until stopped; returns the producer in use (recreated after fatal errors)."""
        interval = 1.0 / self.spec.rate if self.spec.rate > 0 else 0.0
        next_at = time.monotonic()
        client_errors = 0
        while not self._stop.is_set():
            try:
                if self._fatal.is_set():
                    self._close(producer)
                    producer = self._new_producer()
                    self._fatal.clear()
                    self._event("recreated", "after a fatal error")
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
                client_errors += 1
                self._event("client-error", f"{type(exc).__name__}: {exc}")
                if client_errors >= MAX_CLIENT_ERRORS:
                    self._event("stopped", f"after {client_errors} client errors")
                    break
        return producer

    def _send(self, producer: Producer, count: int) -> None:
        """Hand `count` sends to the client in one produce_batch call; their invoke time is that call's."""
        keyed, first = self.spec.keyed, self.seq
        self.seq += count
        sends = [(seq, f"{self.pid}-{seq % 16}" if keyed else None) for seq in range(first, self.seq)]
        t0 = now_ns()
        batch = [{"value": encode(self.pid, seq, self.spec.payload_bytes), "key": key,
                  "callback": self._on_delivery(seq, key, t0)} for seq, key in sends]
        for seq, key in sends:
            self._pending[seq] = (t0, key)
        # If the call itself raises, which sends it enqueued is unknown: they stay pending, and each ends with its
        # delivery report or, without one, as `info` at the end.
        producer.produce_batch(self.topic, batch)
        refused = [(seq, key, msg["_error"]) for (seq, key), msg in zip(sends, batch, strict=True) if "_error" in msg]
        if refused:
            self.errors += len(refused)
            t1 = now_ns()
            for seq, _, _ in refused:
                del self._pending[seq]
            self.history.write_many("sends", [
                {"producer": self.pid, "seq": seq, "key": key, "topic": self.topic, "partition": -1,
                 "t_invoke": t0, "t_complete": t1, "outcome": "fail", "error": err.name(), "offset": -1}
                for seq, key, err in refused])

    def _on_delivery(self, seq: int, key: str | None, t0: int) -> Callable[[KafkaError | None, Message], None]:
        """The delivery report of one send: `ok` without error, otherwise `info` (it may have been written)."""
        def delivered(err: KafkaError | None, msg: Message) -> None:
            ok = err is None
            self.acked += ok
            self.errors += not ok
            self.history.write("sends", {
                "producer": self.pid, "seq": seq, "key": key, "topic": self.topic, "partition": msg.partition(),
                "t_invoke": t0, "t_complete": now_ns(), "outcome": "ok" if ok else "info",
                "error": None if ok else err.name(), "offset": msg.offset() if ok and msg.offset() >= 0 else -1})
            del self._pending[seq]
        return delivered

    def _settle_pending(self) -> None:
        """Sends enqueued whose delivery report never came (client crash, unflushed at the end): `info`, since
        they may have been written; without a row their values would read as `unexpected`."""
        for seq, (t0, key) in sorted(self._pending.items()):
            self.history.write("sends", {"producer": self.pid, "seq": seq, "key": key, "topic": self.topic,
                                         "partition": -1, "t_invoke": t0, "t_complete": now_ns(),
                                         "outcome": "info", "error": "NO_DELIVERY_REPORT", "offset": -1})
        self._pending.clear()

    def _close(self, producer: Producer) -> None:
        """Wait for outstanding delivery reports (each ends ok or info by message.timeout.ms)."""
        deadline = time.monotonic() + self.spec.message_timeout_ms / 1000 + 10
        try:
            while len(producer) and time.monotonic() < deadline:
                producer.flush(1.0)
        except Exception as exc:  # noqa: BLE001 - what stays unreported is settled as `info`
            self._event("client-error", f"{type(exc).__name__}: {exc}")
        if len(producer):
            self._event("unflushed", f"{len(producer)} sends without a delivery report")
