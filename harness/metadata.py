"""What a cluster says about itself: admin clients, leaders, ISRs, the controller, topics, and
waiting for them."""

from __future__ import annotations

import contextlib
import tarfile
import time
from collections.abc import Callable, Iterable
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicCollection, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    ConfigResource,
    NewTopic,
    OffsetSpec,
    PartitionMetadata,
)
from tenacity import (
    RetryError,
    Retrying,
    retry_if_exception,
    retry_if_exception_type,
    retry_if_result,
    stop_after_delay,
    wait_fixed,
)

from contracts.clientlog import QUIET
from contracts.errors import ClusterError
from harness.broker_config import ClusterSpec
from harness.firewall import Firewall
from harness.node import KafkaNode
from harness.zookeeper import ZooKeeper

QUORUM_READS = 5
QUORUM_STATE = "/var/lib/kafka/data/__cluster_metadata-0/quorum-state"


# how often bring-up asks again: brokers registered, a new topic's full ISR and leaders
SETTLING_EVERY_S = 0.1


def wait_for(what: str, check: Callable[[], Any], timeout_s: float = 60.0,
             every_s: float = 0.5) -> Any:
    """Poll `check()` (tenacity) until it returns a truthy value; cluster and client errors count as
    not yet. On timeout say what was awaited and what was last seen."""
    last = None

    def attempt():
        nonlocal last
        try:
            last = check()
        except (ClusterError, KafkaException) as exc:
            last = exc
            return None
        return last

    try:
        return Retrying(stop=stop_after_delay(timeout_s), wait=wait_fixed(every_s),
                        retry=retry_if_result(lambda value: not value))(attempt)
    except RetryError:
        raise ClusterError(f"Timed out after {timeout_s:.0f}s waiting for {what} (last seen: "
                           f"{last!r})") from None


class Metadata:
    """Metadata queries against the brokers that can be trusted right now (running, not cut off)."""

    wait_for = staticmethod(wait_for)

    def __init__(self, spec: ClusterSpec, nodes: Callable[[], list[KafkaNode]],
                 firewall: Firewall, voters: Callable[[], list[KafkaNode]],
                 zookeeper: Callable[[], ZooKeeper]) -> None:
        self.spec, self._nodes, self._firewall, self._voters = spec, nodes, firewall, voters
        self._zookeeper = zookeeper  # a session with ZooKeeper, in ZooKeeper mode
        # replica assignments we chose, in their order
        self._assigned: dict[str, list[list[int]]] = {}
        self._answered = -1  # the broker whose metadata answer was the last one taken
        self._topic_ids: dict[str, str] = {}  # a topic keeps its id for life

    def bootstrap_servers(self, node_ids: Iterable[int] | None = None) -> str:
        """Host-side bootstrap list (127.0.0.1 ports), of all brokers or the ones named."""
        nodes = self._nodes()
        ids = set(node_ids) if node_ids is not None else {n.node_id for n in nodes}
        return ",".join(f"127.0.0.1:{n.external_port}" for n in nodes if n.node_id in ids)

    def admin(self, node_ids: Iterable[int] | None = None) -> AdminClient:
        """A fresh admin client; with one node id, its first requests are answered by that
        broker."""
        return AdminClient({"bootstrap.servers": self.bootstrap_servers(node_ids),
                            "socket.timeout.ms": 5000, "socket.connection.setup.timeout.ms": 5000,
                            "log_level": 0})

    def healthy_nodes(self) -> list[int]:
        """Brokers running, not paused and not cut off: the ones whose metadata can be trusted."""
        cut = self._firewall.isolated()
        return [n.node_id for n in self._nodes() if n.node_id not in cut and n.state() == "running"]

    def partitions(self, topic: str, timeout_s: float = 10.0) -> dict[int, PartitionMetadata]:
        """Partition metadata of a topic as seen by a healthy broker (leader -1 when leaderless).
        Brokers learn of a new topic or a restarted peer a little apart, so an unknown-topic answer
        is retried for a while."""
        return self.partitions_of((topic,), timeout_s, complete=True)[topic]

    def partitions_of(self, topics: tuple[str, ...], timeout_s: float = 10.0,
                      complete: bool = False) -> dict[str, dict[int, PartitionMetadata]]:
        """Partition metadata of several topics from one broker's answer, the broker that answered
        last asked first (one restarting broker costs a sampler one timeout, not one per topic).
        Without `complete`, a topic that broker does not know is absent from the result; with it, or
        if it knows none, another is asked."""
        deadline = time.monotonic() + timeout_s
        last: Exception | None = None
        while True:
            nodes = self.healthy_nodes() or [n.node_id for n in self._nodes()]
            for node_id in sorted(nodes, key=lambda n: n != self._answered):
                try:
                    md = self.admin([node_id]).list_topics(
                        topics[0] if len(topics) == 1 else None, timeout=5)
                except KafkaException as exc:
                    last = exc
                    continue
                found = {t: md.topics[t].partitions for t in topics
                         if t in md.topics and md.topics[t].error is None}
                if found and (len(found) == len(topics) or not complete):
                    self._answered = node_id
                    return found
                errors = {t: md.topics[t].error if t in md.topics else "absent" for t in topics
                          if t not in found}
                last = ClusterError(", ".join(f"topic {t}: {e}" for t, e in errors.items()))
            if time.monotonic() > deadline:
                raise ClusterError(f"No broker answered metadata for {', '.join(topics)}: {last}")
            time.sleep(0.5)

    def topic_id(self, topic: str) -> str:
        """A topic's id as Kafka prints it (URL-safe base64): share-partition keys name it."""
        if topic not in self._topic_ids:
            admin = self.admin()  # kept alive until its answer came
            future = admin.describe_topics(TopicCollection([topic]))[topic]
            self._topic_ids[topic] = str(future.result(timeout=10).topic_id)
        return self._topic_ids[topic]

    def leader(self, topic: str, partition: int) -> int:
        """Current leader id of a partition, -1 if it has none."""
        return self.partitions(topic)[partition].leader

    def isr(self, topic: str, partition: int) -> list[int]:
        """Current in-sync replicas of a partition."""
        return sorted(self.partitions(topic)[partition].isrs)

    def replicas(self, topic: str, partition: int) -> list[int]:
        """Assigned replicas of a partition."""
        return list(self.partitions(topic)[partition].replicas)

    def controller(self) -> int:
        """The active controller: the KRaft quorum leader with the highest epoch, or ZooKeeper's
        controller."""
        if self.spec.metadata == "kraft":
            return self._quorum_leader()
        if any(n.role == "controller" for n in self._voters()):
            # a migration: the brokers would name a KRaft controller they do not list, an answer
            # librdkafka's DescribeCluster asserts on and aborts the process
            try:
                with self._zookeeper() as zk:
                    return zk.controller()
            except ClusterError:
                return -1
        for node_id in self.healthy_nodes():
            admin = self.admin([node_id])  # keep the handle alive until the future resolves
            try:
                desc = admin.describe_cluster(request_timeout=5).result(timeout=10)
            except KafkaException:
                continue
            return desc.controller.id if desc.controller else -1
        return -1

    def _quorum_leader(self) -> int:
        """The leader of the highest epoch any running voter's quorum-state file names."""
        best = (-1, -1)
        for node in self._voters():
            if node.state() == "running":
                state = self._quorum_state(node)
                best = max(best, (state.get("leaderEpoch", -1), state.get("leaderId", -1)))
        return best[1]

    @staticmethod
    def _quorum_state(node: KafkaNode) -> dict:
        """A voter's quorum-state file ({} if unreadable), through the engine's archive endpoint: a
        `docker exec` racing a nemesis pause of the node hangs runc, and with it every engine call
        on that container. Kafka replaces the file during an election, so a read can come cut short
        or broken (see `read_file`); a few reads apart get the whole file."""
        try:
            return node.read_json(QUORUM_STATE, attempts=QUORUM_READS, wait_s=0.2) or {}
        except (ValueError, tarfile.ReadError):
            return {}

    def assignment(self, topic: str, partition: int) -> list[int]:
        """A partition's replicas in assignment order, the order a controller elects in: as the
        topic was created with, when we chose it (a 0.10 broker's metadata lists replicas in no
        particular order), else as listed."""
        if topic in self._assigned:
            return list(self._assigned[topic][partition])
        return self.replicas(topic, partition)

    def create_topic(self, name: str, partitions: int, replication_factor: int,
                     config: dict[str, str] | None = None, timeout_s: float = 60.0,
                     replicas: list[int] | None = None) -> None:
        """Create a topic (optionally with every partition on the given brokers, leader rotating)
        and wait until every partition has a leader and its full ISR."""
        cfg = {k: str(v) for k, v in (config or {}).items()}
        if replicas:
            assignment = [replicas[p % len(replicas):] + replicas[:p % len(replicas)]
                          for p in range(partitions)]
            topic = NewTopic(name, partitions, replica_assignment=assignment, config=cfg)
            self._assigned[name] = assignment
        else:
            topic = NewTopic(name, partitions, replication_factor, config=cfg)
        admin = self.admin()  # keep the handle alive until the future resolves
        for attempt in Retrying(stop=stop_after_delay(timeout_s), wait=wait_fixed(1.0),
                                reraise=True, retry=retry_if_exception(_not_yet)):
            with attempt:
                try:
                    admin.create_topics([topic], request_timeout=30)[name].result(timeout=60)
                except KafkaException as exc:  # an earlier attempt may have created it after all
                    if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                        raise
        self.wait_full_isr(name, timeout_s, SETTLING_EVERY_S)
        self.wait_leaders_serving(name, partitions, timeout_s)

    def log_starts(self, topics: tuple[str, ...], partitions: int) -> dict[tuple[str, int], int]:
        """Each partition's log start offset (ListOffsets, earliest), from the leaders that answer
        within 5 s."""
        specs = {TopicPartition(t, p): OffsetSpec.earliest() for t in topics
                 for p in range(partitions)}
        admin = self.admin()  # keep the handle alive until the futures resolve
        starts = {}
        for tp, future in admin.list_offsets(specs, request_timeout=5).items():
            with contextlib.suppress(KafkaException):
                starts[(tp.topic, tp.partition)] = future.result(timeout=10).offset
        return starts

    def topic_settings(self, name: str, keys: Iterable[str]) -> dict[str, str]:
        """The topic's effective values of some configs (its own, else the brokers' defaults)."""
        resource = ConfigResource(ConfigResource.Type.TOPIC, name)
        for attempt in Retrying(stop=stop_after_delay(30), wait=wait_fixed(1.0), reraise=True,
                                retry=retry_if_exception_type(KafkaException)):
            with attempt:
                admin = self.admin()  # keep the handle alive until the future resolves
                entries = admin.describe_configs([resource], request_timeout=10)[resource].result(
                    timeout=20)
        return {k: entries[k].value for k in keys if k in entries}

    def wait_leaders_serving(self, topic: str, partitions: int, timeout_s: float = 60.0) -> None:
        """Wait until each partition's leader answers for it: a broker applies the metadata that
        makes it leader some time after others report it so, and sends before then wait on
        retries."""
        consumer = Consumer({"bootstrap.servers": self.bootstrap_servers(self.healthy_nodes()),
                             "group.id": "kchaos-metadata", "enable.auto.commit": False,
                             "socket.connection.setup.timeout.ms": 5000, "log_level": 0,
                             "logger": QUIET})
        try:
            wait_for(f"every leader of {topic} answering for its partition", lambda: all(
                consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=5, cached=False)
                for p in range(partitions)), timeout_s, SETTLING_EVERY_S)
        finally:
            consumer.close()

    def wait_full_isr(self, topic: str, timeout_s: float = 60.0, every_s: float = 0.5) -> None:
        """Wait until every partition of a topic has a leader and all its replicas in the ISR,
        asking every `every_s` (each ask inspects every broker's container and opens an admin
        client: during faults, not too often)."""
        def full() -> bool:
            parts = self.partitions(topic)
            return bool(parts) and all(p.leader >= 0 and set(p.isrs) == set(p.replicas)
                                       for p in parts.values())
        wait_for(f"a full ISR on every partition of {topic}", full, timeout_s, every_s)


# Admin errors of a cluster still settling, worth another try: fewer brokers registered than a
# topic's replicas, and librdkafka's own transient ones (a broker connection torn down or timed out
# while the request was out)
TRANSIENT = (KafkaError.INVALID_REPLICATION_FACTOR, KafkaError._DESTROY_BROKER,
             KafkaError._TRANSPORT, KafkaError._TIMED_OUT, KafkaError.REQUEST_TIMED_OUT,
             KafkaError.NOT_CONTROLLER)


def _not_yet(exc: BaseException) -> bool:
    """A topic creation worth retrying: a retriable error, or one of a cluster still settling."""
    if not isinstance(exc, KafkaException) or not isinstance(exc.args[0], KafkaError):
        return False
    return exc.args[0].retriable() or exc.args[0].code() in TRANSIENT
