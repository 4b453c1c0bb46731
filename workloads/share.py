"""Share consumers (KIP-932): members of one share group that record every record they process, the
acknowledgement they chose for it, and how their acknowledgements ended."""

from __future__ import annotations

import random
import time

from confluent_kafka import AcknowledgeType, IllegalStateException, KafkaException, ShareConsumer

from contracts.clientlog import QUIET
from contracts.history import Event, HistoryWriter, now_ns
from contracts.share import Ack, AckOutcome, ShareSpec
from workloads.consumer import read_rows
from workloads.worker import Worker

TYPES = {Ack.ACCEPT: AcknowledgeType.ACCEPT, Ack.RELEASE: AcknowledgeType.RELEASE,
         Ack.REJECT: AcknowledgeType.REJECT}
COMMIT_S = 30.0  # how long a commit of a poll's acknowledgements may take
DRAIN = "share-drain"


def share_config(bootstrap: str, group: str) -> dict:
    """librdkafka share consumer settings: explicit acknowledgement, quiet logs."""
    return {"bootstrap.servers": bootstrap, "group.id": group,
            "share.acknowledgement.mode": "explicit",
            "socket.connection.setup.timeout.ms": 5000, "reconnect.backoff.max.ms": 1000,
            "log_level": 0, "logger": QUIET}


def reader_name(cid: int) -> str:
    """The `reader` a share consumer writes into the history."""
    return f"share-{cid}"


class ShareClient(Worker):
    """One share consumer thread; `drain`: the final one, which accepts everything and ends after
    `idle_s` without a record."""

    positions_itself = True  # once it is handed its first records

    def __init__(self, cid: int, spec: ShareSpec, topics: tuple[str, ...], bootstrap: str,
                 history: HistoryWriter, first: int = 0, idle_s: float = 0.0) -> None:
        self.name = DRAIN if idle_s else reader_name(cid)
        super().__init__(self.name)
        self.spec, self.topics, self.bootstrap, self.history = spec, topics, bootstrap, history
        self.poll, self.idle_s, self.acked = first, idle_s, 0
        self.rng = random.Random(f"{cid}-{first}")

    def _choose(self) -> Ack:
        if self.idle_s:
            return Ack.ACCEPT
        draw = self.rng.random()
        return (Ack.RELEASE if draw < self.spec.release else
                Ack.REJECT if draw < self.spec.release + self.spec.reject else Ack.ACCEPT)

    def _run(self) -> None:
        consumer = ShareConsumer(share_config(self.bootstrap, self.spec.group))
        consumer.subscribe(list(self.topics))
        last, seen = time.monotonic(), set()
        try:
            while not self._stop.is_set():
                if self.idle_s and time.monotonic() - last > self.idle_s:
                    return
                with self.watch("poll", 1.0):
                    msgs = consumer.poll(0.5)
                for error in {str(m.error()) for m in msgs if m.error()} - seen:
                    seen.add(error)  # each kind once: a poll repeats its error every call
                    self.history.event(self.name, Event.CLIENT_ERROR, detail=f"poll: {error}")
                msgs = [m for m in msgs if not m.error()]
                if msgs:
                    last = time.monotonic()
                    self.positioned.set()
                    self._handle(consumer, msgs)
        finally:
            consumer.close()

    def _handle(self, consumer: ShareConsumer, msgs: list) -> None:
        """Process one poll's records and acknowledge them, in the order the scenario's `accept`
        sets: the rows say what was processed, so a crash between the two shows."""
        self.poll += 1
        t, acks = now_ns(), [self._choose() for _ in msgs]
        first = self.spec.accept == "before" and not self.idle_s
        if first:
            self._acknowledge(consumer, msgs, acks)
        time.sleep(0 if self.idle_s else self.rng.uniform(0.5, 1.5) * self.spec.process_ms / 1000)
        self._record(t, msgs, acks)
        if not first:
            self.history.flush()
            self._acknowledge(consumer, msgs, acks)

    def _record(self, t: int, msgs: list, acks: list[Ack]) -> None:
        """The poll's `reads`-shaped rows, with each record's delivery count and the ack drawn."""
        rows = read_rows(self.name, "final" if self.idle_s else "live", self.poll, msgs, t)
        for row, m, ack in zip(rows, msgs, acks, strict=True):
            del row["pos"]
            row |= {"delivery": m.delivery_count() or -1, "ack": ack.value}
        self.history.write_many("shares", rows)

    def _ack_row(self, outcome: AckOutcome, topic: str | None = None, partition: int = -1,
                 error: str = "") -> None:
        self.history.write("share_acks", {"reader": self.name, "poll": self.poll, "topic": topic,
                                          "partition": partition, "t": now_ns(),
                                          "outcome": outcome.value, "error": error or None})

    def _acknowledge(self, consumer: ShareConsumer, msgs: list, acks: list[Ack]) -> None:
        """Mark each record, then commit them: a `sent` row before, an `ok` or `fail` row per
        partition after (a failed commit may still have been applied)."""
        for m, ack in zip(msgs, acks, strict=True):
            try:
                consumer.acknowledge(m, TYPES[ack])
            except (KafkaException, IllegalStateException) as exc:
                self._ack_row(AckOutcome.FAIL, m.topic(), m.partition(), f"acknowledge: {exc}")
        self._ack_row(AckOutcome.SENT)
        self.history.flush()
        try:
            with self.watch("commit_sync", COMMIT_S):
                results = consumer.commit_sync(COMMIT_S)
        except KafkaException as exc:
            self._ack_row(AckOutcome.FAIL, error=str(exc))
            self.history.event(self.name, Event.CLIENT_ERROR, detail=f"commit_sync: {exc}")
            return
        for tp, exc in results.items():
            self._ack_row(AckOutcome.FAIL if exc else AckOutcome.OK, tp.topic, tp.partition,
                          str(exc) if exc else "")
        self.acked += len(msgs)
