"""A real multi-broker cluster comes up, serves, and reacts to node and network faults as Kafka
should."""

from __future__ import annotations

import json
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from contracts import measured
from harness import freezer
from harness.metadata import wait_for

TIMEOUT = 60


def new_topic(cluster, partitions: int = 1) -> str:
    name = f"t-{uuid.uuid4().hex[:8]}"
    cluster.metadata.create_topic(name, partitions, 3, {"min.insync.replicas": "2"})
    return name


def test_acks_all_roundtrip_1000_messages(cluster):
    roundtrip(cluster)


def roundtrip(cluster, idempotent: bool = True) -> None:
    """1,000 records produced with acks=all to a 3-partition topic, all acknowledged, all read
    back."""
    topic = new_topic(cluster, 3)
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers(), "acks": "all",
                  "enable.idempotence": idempotent})
    acked = []
    for i in range(1000):
        p.produce(topic, str(i).encode(), on_delivery=lambda err, msg: acked.append(err is None))
    assert p.flush(30) == 0
    assert len(acked) == 1000 and all(acked)
    c = Consumer({"bootstrap.servers": cluster.bootstrap_servers(), "group.id": topic,
                  "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(topic, i, 0) for i in range(3)])
    seen = set()
    for _ in range(60):
        for m in c.consume(500, timeout=1):
            if not m.error():
                seen.add(int(m.value()))
        if len(seen) == 1000:
            break
    c.close()
    assert seen == set(range(1000))


def test_leader_kill_moves_leadership_and_restart_rejoins_isr(healed):
    c = healed
    topic = new_topic(c)
    old = c.metadata.leader(topic, 0)
    c.node(old).kill()
    assert c.node(old).state() == "exited"
    new = wait_for("a new leader",
                   lambda: (lead := c.metadata.leader(topic, 0)) not in (-1, old) and lead, TIMEOUT)
    assert new in {1, 2, 3} - {old}
    assert old not in c.metadata.isr(topic, 0) or wait_for(
        "the killed broker leaving the ISR", lambda: old not in c.metadata.isr(topic, 0), TIMEOUT)
    c.start_node(old)
    wait_for("the restarted broker rejoining the ISR", lambda: old in c.metadata.isr(topic, 0),
             TIMEOUT)


@pytest.mark.slow  # make test-all: restarts themselves are in the CI tier's other tests
def test_a_restart_is_measured_as_after_a_kill_or_after_a_clean_stop(healed, tmp_path, monkeypatch):
    monkeypatch.setattr(measured, "_file", lambda: tmp_path / "restart-seconds.json")
    c = healed
    c.node(1).terminate()
    c.start_node(1)
    c.node(2).kill()
    c.start_node(2)
    c.node(3).terminate()
    # a clean stop, then a crash: its next restart is not after a clean stop
    c.node(3).begin_start()
    c.node(3).wait_started()
    c.node(3).kill()
    c.start_node(3)
    # with another broker down, a restart may wait for the quorum: it is not measured
    c.node(1).kill()
    c.node(2).kill()
    c.start_node(1)
    c.start_node(2)
    figures = json.loads((tmp_path / "restart-seconds.json").read_text())
    mode = f"{c.spec.version}:{c.spec.metadata}"
    assert sorted(figures) == [f"{mode}:after-clean", f"{mode}:after-kill"]
    assert (len(figures[f"{mode}:after-clean"]), len(figures[f"{mode}:after-kill"])) == (1, 3)


@pytest.mark.slow  # make test-all: test_faults' pause covers it in CI
def test_paused_follower_leaves_isr_and_rejoins(healed):
    c = healed
    topic = new_topic(c)
    follower = next(r for r in c.metadata.replicas(topic, 0) if r != c.metadata.leader(topic, 0))
    c.node(follower).pause()
    assert c.node(follower).state() == "paused"
    wait_for(f"paused broker {follower} leaving the ISR",
             lambda: follower not in c.metadata.isr(topic, 0), TIMEOUT)
    c.node(follower).resume()
    wait_for(f"broker {follower} rejoining the ISR", lambda: follower in c.metadata.isr(topic, 0),
             TIMEOUT)


def test_a_paused_broker_thawed_from_the_host_serves_again_and_resumes(healed):
    """The way out of an engine stuck on a frozen container: the host finds the cgroup docker froze
    and thaws it."""
    c = healed
    topic = new_topic(c)
    follower = next(r for r in c.metadata.replicas(topic, 0) if r != c.metadata.leader(topic, 0))
    node = c.node(follower)
    node.pause()
    wait_for(f"paused broker {follower} leaving the ISR",
             lambda: follower not in c.metadata.isr(topic, 0), TIMEOUT)
    assert freezer.thaw(node.container.id) is True
    wait_for(f"thawed broker {follower} rejoining the ISR",
             lambda: follower in c.metadata.isr(topic, 0), TIMEOUT)
    assert node.state() == "paused"  # the engine was not told
    node.resume()
    assert node.state() == "running"


@pytest.mark.slow  # make test-all: test_faults' partition covers it in CI
def test_broker_partitioned_from_peers_leaves_isr_and_heal_restores(healed):
    c = healed
    topic = new_topic(c)
    follower = next(r for r in c.metadata.replicas(topic, 0) if r != c.metadata.leader(topic, 0))
    others = set(c.node_ids()) - {follower}
    c.firewall.partition({follower: others, **{o: {follower} for o in others}})
    assert "-j DROP" in c.firewall.rules(follower)
    wait_for(f"isolated broker {follower} leaving the ISR",
             lambda: follower not in c.metadata.isr(topic, 0), TIMEOUT)
    c.heal()
    assert "-j DROP" not in c.firewall.rules(follower)
    wait_for(f"broker {follower} rejoining the ISR", lambda: follower in c.metadata.isr(topic, 0),
             TIMEOUT)


def test_brokers_map_the_images_class_data_archive(cluster):
    """A broker JVM that maps the archive starts in ~1.6 s instead of ~2.5 s; one that cannot just
    starts slower."""
    for node in cluster.nodes:
        code, out = node.sh("grep -c /opt/kafka/kafka.jsa /proc/1/maps")
        assert (code == 0
                and int(out) > 0), f"{node.alias} runs without the image's class-data archive"


def test_brokers_restarted_on_each_others_addresses_rejoin_and_serve(healed):
    """Two brokers killed and started together come back on each other's addresses (the engine hands
    out the lowest free one first); their peers must reach each under its name, not its old
    address."""
    c = healed
    topic = new_topic(c)
    before = {n: c.node(n).ip() for n in (2, 3)}
    for n in (2, 3):
        c.node(n).kill()
    c.start_nodes([3, 2])
    assert {n: c.node(n).ip() for n in (2, 3)} == {
        2: before[3], 3: before[2]}, "the addresses were not swapped"
    c.metadata.wait_full_isr(topic, TIMEOUT)
    roundtrip(c)
