"""The final drain: a fresh reader assigned to every partition from the beginning, reading to each
end offset, until the ends hold still."""

from __future__ import annotations

import time
import uuid

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

from contracts.history import Event, HistoryWriter
from workloads.consumer import BATCH, consumer_config, read_rows

SETTLE_S = 1.0  # how long an end offset must hold still before the drain trusts it


START_WAIT_S = 15.0  # how long the log start offsets are asked for once the drain ended


def _watermarks(consumer: Consumer, topic: str, partitions: list[int], deadline: float,
                which: int = 1) -> dict[int, int]:
    """Each partition's high watermark, or its log start offset (`which=0`); a partition whose
    leader does not answer by the deadline is left out."""
    ends: dict[int, int] = {}
    for p in partitions:
        while p not in ends and time.monotonic() < deadline:
            try:
                ends[p] = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=5)[which]
            except KafkaException:
                time.sleep(0.5)  # leader moving or not yet known: retry within the bound
    return ends


def _read_to(consumer: Consumer, topic: str, ends: dict[int, int], position: dict[int, int],
             history: HistoryWriter, poll: int, deadline: float, idle_s: float) -> tuple[
                 int, float]:
    """Read until every partition's position reaches its end (or the deadline, which each batch read
    moves to `idle_s` away); returns the last poll number and the deadline. An idle poll takes the
    client's own positions too: a transaction's marker holds the last offset of a partition and is
    never returned as a record."""
    while time.monotonic() < deadline and any(position[p] < ends[p] for p in ends):
        msgs = consumer.consume(BATCH, timeout=0.5)
        if not msgs:
            for tp in consumer.position([TopicPartition(topic, p) for p in ends]):
                position[tp.partition] = max(position[tp.partition], tp.offset)
            continue
        poll += 1
        deadline = max(deadline, time.monotonic() + idle_s)
        rows = read_rows("drain", "final", poll, msgs)
        history.write_many("reads", rows)
        for r in rows:
            position[r["partition"]] = max(position[r["partition"]], r["offset"] + 1)
    return poll, deadline


def final_drain(bootstrap: str, topic: str, partitions: int, history: HistoryWriter,
                timeout_s: float = 90.0, isolation: str = "read_uncommitted") -> dict[int, bool]:
    """Read every partition to its high watermark, again while the watermark still moves (acks=1
    writes acked above it are committed once the followers fetch them), and record each end offset,
    whether it was reached, and each log start offset. It gives up after `timeout_s` without a
    record, so an hours-long run's log is read whole. An eos-copy output topic is read as its users
    would, with read_committed."""
    consumer = Consumer(consumer_config(bootstrap, f"chaos-drain-{uuid.uuid4().hex[:8]}", isolation,
                                        False))
    deadline = time.monotonic() + timeout_s
    ends = _watermarks(consumer, topic, list(range(partitions)), deadline)
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in ends])
    position = {p: 0 for p in ends}
    assigned = [TopicPartition(topic, p) for p in ends]
    poll = 0
    try:
        while True:
            poll, deadline = _read_to(consumer, topic, ends, position, history, poll, deadline,
                                      timeout_s)
            if time.monotonic() >= deadline or any(position[p] < ends[p] for p in ends):
                break
            # paused, no fetch waits out fetch.wait.max.ms on a leader's connection, where the next
            # offset request would queue behind it: the settle's fetches end within it
            consumer.pause(assigned)
            time.sleep(SETTLE_S)
            later = _watermarks(consumer, topic, list(ends), deadline)
            if all(later.get(p, end) <= end for p, end in ends.items()):
                break  # every end held still: the drain read the whole log
            ends = {p: max(end, later.get(p, end)) for p, end in ends.items()}
            consumer.resume(assigned)
        starts = _watermarks(consumer, topic, list(ends), time.monotonic() + START_WAIT_S, which=0)
    finally:
        consumer.close()
    for p, start in starts.items():
        history.event("drain", Event.FINAL_START, topic=topic, partition=p, offset=start)
    reached = {p: p in ends and position[p] >= ends[p] for p in range(partitions)}
    for p in range(partitions):
        history.event("drain", Event.FINAL_END, topic=topic, partition=p, offset=ends.get(p, -1),
                      detail="reached" if reached[p] else "not-reached")
    return reached
