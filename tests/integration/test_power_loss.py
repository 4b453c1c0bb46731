"""A broker on lazyfs that loses power keeps what it fsynced and loses what it had not, on a real
Kafka broker."""

from __future__ import annotations

import os

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from contracts.versions import DEFAULT_VERSION
from harness.broker_config import ClusterSpec
from harness.cluster import Cluster

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="lazyfs needs /dev/fuse and root to "
                                                          "build and mount")
SENT = 500


def produce(bootstrap: str, topic: str) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    acked = []
    for i in range(SENT):
        p.produce(topic, str(i).encode(), on_delivery=lambda err, msg: acked.append(err is None))
    p.flush(30)
    assert acked == [True] * SENT


def end_offset(bootstrap: str, topic: str) -> int:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "power-loss-test"})
    try:
        return c.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)[1]
    finally:
        c.close()


def test_a_broker_that_loses_power_keeps_the_fsynced_topic_and_loses_the_other():
    with Cluster(ClusterSpec(version=DEFAULT_VERSION, brokers=1, lazy_disk=True)) as cluster:
        cluster.metadata.create_topic("fsynced", 1, 1, {"flush.messages": "1"})
        cluster.metadata.create_topic("unsynced", 1, 1)
        for topic in ("fsynced", "unsynced"):
            produce(cluster.bootstrap_servers(), topic)
        cut = cluster.power_off([1])
        assert cluster.node(1).state() == "exited" and cut.losses[1].bytes > 0
        cluster.start_nodes([1])
        for topic in ("fsynced", "unsynced"):
            cluster.metadata.wait_full_isr(topic)
        assert end_offset(cluster.bootstrap_servers(), "fsynced") == SENT
        assert end_offset(cluster.bootstrap_servers(), "unsynced") == 0
