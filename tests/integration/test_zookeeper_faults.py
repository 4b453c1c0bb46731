"""Faults on a ZooKeeper-mode cluster, where the controller is one of the brokers and shares their
listener."""

from __future__ import annotations

import random
import threading
import uuid

import pytest
from confluent_kafka import Producer

from faults.ops import Ctx
from faults.registry import OPS
from harness.broker_config import ClusterSpec
from harness.cluster import Cluster
from kchaos.catalog import fault_spec
from tests.integration.conftest import FAST_ISR

pytestmark = pytest.mark.slow  # make test-all only: ZooKeeper-mode clusters on lazyfs


@pytest.mark.parametrize("fault", ["last-replica-standing", "last-replica-power-loss"])
def test_last_replica_with_the_controller_among_the_cut_off_followers(fault):
    """Whoever the controller is, the op must see the ISR shrink to the leader and bring the leader
    back (a cut-off power-loss leader must still hear the controller answer its AlterIsr)."""
    with Cluster(ClusterSpec(version="3.9.2", metadata="zookeeper", config=FAST_ISR,
                             lazy_disk=True)) as c:
        controller = c.metadata.controller()
        leader, third = [n for n in c.node_ids() if n != controller]
        topic = f"lr-{uuid.uuid4().hex[:8]}"
        c.metadata.create_topic(topic, 1, 3, {"min.insync.replicas": "2"},
                                replicas=[leader, controller, third])
        ctx, done = Ctx(c, topic, random.Random(1), threading.Event()), threading.Event()
        writer = threading.Thread(target=write_until, args=(c.bootstrap_servers(), topic, done),
                                  daemon=True)
        writer.start()  # followers fall out of the ISR only when the leader has records they lack
        try:
            row = OPS[fault](ctx, fault_spec(fault=fault, for_="10s"), [])
        finally:
            done.set()
            writer.join(30)
        assert (row["leader"], sorted(row["followers"])) == (leader, sorted([controller, third]))
        assert c.stopped() == []
        if fault == "last-replica-power-loss":
            # once its session expired: no eligible leader replicas here
            assert row["leader_while_down"] == -1


def write_until(bootstrap: str, topic: str, done: threading.Event) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "1", "message.timeout.ms": 5000})
    while not done.wait(0.01):
        producer.produce(topic, b"x")
        producer.poll(0)
    producer.flush(10)
