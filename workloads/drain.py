"""The final drain: a fresh reader assigned to every partition from the beginning, reading to each end offset."""

from __future__ import annotations

import time
import uuid

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

from contracts.history import Event, HistoryWriter
from workloads.consumer import BATCH, consumer_config, read_rows


def final_drain(bootstrap: str, topic: str, partitions: int, history: HistoryWriter,
                timeout_s: float = 90.0) -> dict[int, bool]:
    """Read every partition to its high watermark; record each end offset and whether it was reached."""
    consumer = Consumer(consumer_config(bootstrap, f"chaos-drain-{uuid.uuid4().hex[:8]}", "read_uncommitted", False))
    deadline = time.monotonic() + timeout_s
    ends: dict[int, int] = {}
    for p in range(partitions):
        while p not in ends and time.monotonic() < deadline:
            try:
                _low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=5)
                ends[p] = high
            except KafkaException:
                time.sleep(0.5)  # leader moving or not yet known: retry within the bound
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in ends])
    position = {p: 0 for p in ends}
    poll = 0
    try:
        while time.monotonic() < deadline and any(position[p] < ends[p] for p in ends):
            msgs = consumer.consume(BATCH, timeout=0.5)
            if not msgs:
                continue
            poll += 1
            rows = read_rows("drain", "final", poll, msgs)
            history.write_many("reads", rows)
            for r in rows:
                position[r["partition"]] = max(position[r["partition"]], r["offset"] + 1)
    finally:
        consumer.close()
    reached = {p: p in ends and position[p] >= ends[p] for p in range(partitions)}
    for p in range(partitions):
        history.event("drain", Event.FINAL_END, topic=topic, partition=p, offset=ends.get(p, -1),
                      detail="reached" if reached[p] else "not-reached")
    return reached
