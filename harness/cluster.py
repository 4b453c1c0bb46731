"""A real Kafka cluster of N brokers on a private Docker network: lifecycle, faults, metadata, logs."""

from __future__ import annotations

import base64
import concurrent.futures as cf
import contextlib
import json
import signal
import socket
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic
from tenacity import RetryError, Retrying, retry_if_exception, retry_if_result, stop_after_delay, wait_fixed
from testcontainers.core.network import Network

from harness import images, labels, netrules
from harness.errors import ClusterError
from harness.node import KafkaNode
from harness.replicas import Parsed, node_segments, parse_segment

INTERNAL_PORT, CONTROLLER_PORT, ZK_PORT = 9092, 9093, 2181
# Kafka's default before KIP-537 (18 s since 2.5): a SIGKILLed broker can restart that much sooner (see KafkaNode).
ZK_SESSION_MS = 6000
QUORUM_STATE = "/var/lib/kafka/data/__cluster_metadata-0/quorum-state"


@dataclass
class ClusterSpec:
    """What to start: Kafka version, broker count, metadata mode and broker config overrides."""

    version: str = images.DEFAULT_VERSION
    brokers: int = 3
    metadata: str = "kraft"  # or "zookeeper" (Kafka 3.x only)
    config: dict[str, str] = field(default_factory=dict)
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:10])

    def validate(self) -> None:
        if not 1 <= self.brokers <= 5:
            raise ClusterError(f"Expected 1 to 5 brokers but got kafka.brokers={self.brokers}")
        if self.metadata == "zookeeper" and images.major(self.version) >= 4:
            raise ClusterError(f"ZooKeeper mode was removed in Kafka 4.0; kafka.version={self.version} "
                               "needs kafka.metadata=kraft (or use a 3.x version)")


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def broker_defaults(brokers: int) -> dict[str, str]:
    """Broker settings a chaos run wants whatever the scenario: fast rebalances, no auto-created topics, and few
    internal partitions: a SIGKILLed broker recovers every partition it hosts before it starts, and Kafka's 50
    __consumer_offsets partitions made that take 22 s instead of 7 s (measured 2026-11-23)."""
    rf = str(min(3, brokers))
    return {
        "offsets.topic.num.partitions": rf,
        "transaction.state.log.num.partitions": rf,
        "offsets.topic.replication.factor": rf,
        "transaction.state.log.replication.factor": rf,
        "transaction.state.log.min.isr": str(min(2, brokers)),
        "group.initial.rebalance.delay.ms": "0",
        "auto.create.topics.enable": "false",
        "unclean.leader.election.enable": "false",
        "replica.lag.time.max.ms": "10000",
        "num.partitions": "1",
        "log.dirs": "/var/lib/kafka/data",
        "inter.broker.listener.name": "INTERNAL",
        "log.flush.interval.messages": "9223372036854775807",
    }


class Cluster:
    """N brokers (KRaft combined mode by default, or ZooKeeper mode for 3.x) on one private network."""

    def __init__(self, spec: ClusterSpec) -> None:
        spec.validate()
        self.spec = spec
        self.image = images.image_for(spec.version)
        self.cluster_id = _cluster_id()
        self.network: Network | None = None
        self.nodes: list[KafkaNode] = []
        self.zookeeper: KafkaNode | None = None
        self.grudge: dict[int, set[int]] = {}
        self.link_rules: dict[int, list[str]] = {}
        self._old_handlers: dict[int, object] = {}

    # -- lifecycle ----------------------------------------------------------------------------------------
    def __enter__(self) -> Cluster:
        self._install_signal_handlers()
        try:
            self.start()
        except BaseException as exc:
            self._stop_after(exc)
            raise
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self._stop_after(exc)

    def _stop_after(self, exc: BaseException | None) -> None:
        """Tear down; when the run itself failed (`exc`), a teardown error is noted on that failure, never put in
        its place."""
        try:
            self.stop()
        except Exception as stop_exc:
            if exc is None:
                raise
            exc.add_note(f"teardown also failed: {type(stop_exc).__name__}: {stop_exc}")

    def start(self, timeout_s: float = 120.0) -> Cluster:
        """Create the network and every node, then wait until each broker is registered and answers metadata."""
        if not images.image_exists(self.image):
            raise ClusterError(f"Image {self.image} is missing; run `kchaos images build --kafka {self.spec.version}`")
        tag = labels.labels(self.spec.run_id, "network")
        self.network = Network(docker_network_kw={"labels": tag, "driver": "bridge"})
        self.network.name = f"kchaos-{self.spec.run_id}"
        self.network.create()
        zk = self.spec.metadata == "zookeeper"
        if zk:
            self.zookeeper = self._node(0, "zookeeper").with_properties(
                {"dataDir": "/var/lib/zookeeper", "clientPort": str(ZK_PORT), "admin.enableServer": "false",
                 "maxClientCnxns": "0", "tickTime": "2000", "4lw.commands.whitelist": "*"})
            self.zookeeper.launch()
            self.zookeeper.wait_started(timeout_s)
        for i in range(1, self.spec.brokers + 1):
            node = self._node(i, "zk-broker" if zk else "kraft").with_external_port(free_port())
            node.with_properties(self._properties(node))
            self.nodes.append(node)
        for node in self.nodes:
            node.launch()
        for node in self.nodes:
            node.wait_started(timeout_s)
        self.wait_ready(timeout_s)
        return self

    def _node(self, node_id: int, role: str) -> KafkaNode:
        return KafkaNode(self.image, node_id, role).on(self.network, labels.labels(self.spec.run_id, "node"),
                                                        self.cluster_id)

    def controllers(self) -> list[int]:
        """Node ids of the KRaft controller quorum (static voters): the first three nodes, or all if fewer."""
        return list(range(1, min(3, self.spec.brokers) + 1))

    def _properties(self, node: KafkaNode) -> dict[str, str]:
        props = broker_defaults(self.spec.brokers)
        listeners = {"INTERNAL": INTERNAL_PORT, "EXTERNAL": node.external_port}
        if self.spec.metadata == "zookeeper":
            props |= {"broker.id": str(node.node_id), "zookeeper.connect": f"zookeeper:{ZK_PORT}",
                      "zookeeper.session.timeout.ms": str(ZK_SESSION_MS)}
        else:
            voters = self.controllers()
            roles = "broker,controller" if node.node_id in voters else "broker"
            if node.node_id in voters:
                listeners["CONTROLLER"] = CONTROLLER_PORT
            props |= {
                "process.roles": roles,
                "node.id": str(node.node_id),
                "controller.quorum.voters": ",".join(f"{v}@kafka-{v}:{CONTROLLER_PORT}" for v in voters),
                "controller.listener.names": "CONTROLLER",
            }
        props |= {
            "listeners": ",".join(f"{name}://0.0.0.0:{port}" for name, port in listeners.items()),
            "advertised.listeners": f"INTERNAL://{node.alias}:{INTERNAL_PORT},EXTERNAL://127.0.0.1:{node.external_port}",
            "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT",
        }
        return props | {k: str(v) for k, v in self.spec.config.items()}

    def wait_ready(self, timeout_s: float = 120.0) -> None:
        """Every broker registered and a metadata request answered; on timeout name the missing brokers."""
        want = {n.node_id for n in self.nodes}
        seen: set[int] = set()

        def registered() -> bool:
            nonlocal seen
            seen = set(self.admin().list_topics(timeout=5).brokers)
            return seen == want

        try:
            self.wait_for("every broker registered", registered, timeout_s)
        except ClusterError as exc:
            missing = sorted(want - seen) or sorted(want)
            tails = "\n".join(f"--- kafka-{m} ---\n{self.node(m).log_tail(15)}" for m in missing)
            raise ClusterError(f"Brokers {missing} did not register within {timeout_s:.0f}s "
                               f"(registered: {sorted(seen)}).\n{tails}") from exc

    def stop(self) -> None:
        """Remove every node and the network; safe to call twice and after a failed start. A node that cannot be
        removed does not keep the others: the first such error is raised once everything else is gone."""
        errors = []
        for node in [*self.nodes, *([self.zookeeper] if self.zookeeper else [])]:
            try:
                node.remove()
            except Exception as exc:
                errors.append(exc)
        if self.network is not None and self.network._network is not None:
            with contextlib.suppress(Exception):  # already gone is fine; labels.clean() is the fallback
                self.network.remove()
            self.network._network = None
        try:
            labels.clean(self.spec.run_id)
        except Exception as exc:
            errors.append(exc)
        self._restore_signal_handlers()
        if errors:
            raise errors[0]

    def _install_signal_handlers(self) -> None:
        def raise_exit(signum, _frame):
            raise SystemExit(128 + signum)

        for sig in (signal.SIGTERM, signal.SIGHUP):
            try:
                self._old_handlers[sig] = signal.signal(sig, raise_exit)
            except ValueError:  # not the main thread
                return

    def _restore_signal_handlers(self) -> None:
        for sig, handler in self._old_handlers.items():
            signal.signal(sig, handler)
        self._old_handlers.clear()

    # -- nodes -------------------------------------------------------------------------------------------
    def node(self, node_id: int) -> KafkaNode:
        """The broker with this id."""
        for n in self.nodes:
            if n.node_id == node_id:
                return n
        raise ClusterError(f"No broker {node_id}; brokers are {[n.node_id for n in self.nodes]}")

    def node_ids(self) -> list[int]:
        return [n.node_id for n in self.nodes]

    def bootstrap_servers(self, node_ids: Iterable[int] | None = None) -> str:
        """Host-side bootstrap list (127.0.0.1 ports), of all brokers or the ones named."""
        ids = set(node_ids) if node_ids is not None else set(self.node_ids())
        return ",".join(f"127.0.0.1:{n.external_port}" for n in self.nodes if n.node_id in ids)

    def start_node(self, node_id: int) -> None:
        """Restart a stopped broker with its data, then re-apply the network rules in force for it."""
        self.start_nodes([node_id])

    def start_nodes(self, node_ids: Iterable[int]) -> None:
        """Restart brokers together (a KRaft voter cannot finish starting without a quorum), wait for each,
        then re-apply the network rules in force for them."""
        nodes = [self.node(i) for i in node_ids]
        for n in nodes:
            n.begin_start()
        for n in nodes:
            n.wait_started()
            self._apply_rules(n)

    # -- network faults ------------------------------------------------------------------------------------
    def partition(self, grudge: dict[int, set[int]]) -> None:
        """Apply a grudge: each node drops every packet from the peers it names (broker to broker only)."""
        self.grudge = {k: set(v) for k, v in grudge.items() if v}
        for node in self.nodes:
            self._apply_rules(node)

    def link_fault(self, node_id: int, fragment: str) -> None:
        """Add a client-side or link rule (port block, TCP reset, packet loss, bandwidth) to one node."""
        self.link_rules.setdefault(node_id, []).append(fragment)
        self._apply_rules(self.node(node_id))

    def heal(self) -> None:
        """Remove every partition and link rule, resume paused nodes; stopped nodes are left to start_node."""
        self.grudge.clear()
        self.link_rules.clear()
        for node in self.nodes:
            node.resume()
            self._apply_rules(node)

    def _apply_rules(self, node: KafkaNode) -> None:
        if node.state() != "running":
            return
        peers = [self.node(p).ip() for p in sorted(self.grudge.get(node.node_id, ()))]
        if self.zookeeper and self.zookeeper.node_id in self.grudge.get(node.node_id, ()):
            peers.append(self.zookeeper.ip())
        script = netrules.script(netrules.FLUSH, netrules.drop_from(peers) if peers else "",
                                 *self.link_rules.get(node.node_id, []))
        code, out = node.sh(script)
        if code != 0:
            raise ClusterError(f"network rules on {node.alias} failed (exit {code}): {out.strip()[-300:]}")

    def rules(self, node_id: int) -> str:
        """The iptables and tc state inside a node (for tests and reports)."""
        return self.node(node_id).sh(f"iptables -S {netrules.CHAIN} 2>&1; tc qdisc show dev eth0")[1]

    def isolated(self) -> set[int]:
        """Brokers that currently drop or are dropped by a peer, or refuse clients."""
        cut = set(self.grudge) | set(self.link_rules)
        for peers in self.grudge.values():
            cut |= peers
        return cut

    # -- metadata ------------------------------------------------------------------------------------------
    def admin(self, node_ids: Iterable[int] | None = None) -> AdminClient:
        """A fresh admin client; with one node id, its first requests are answered by that broker."""
        return AdminClient({"bootstrap.servers": self.bootstrap_servers(node_ids), "socket.timeout.ms": 5000,
                            "socket.connection.setup.timeout.ms": 5000, "log_level": 0})

    def healthy_nodes(self) -> list[int]:
        """Brokers running, not paused and not cut off: the ones whose metadata can be trusted."""
        cut = self.isolated()
        return [n.node_id for n in self.nodes if n.node_id not in cut and n.state() == "running"]

    def partition_metadata(self, topic: str, timeout_s: float = 10.0):
        """Partition metadata of a topic as seen by a healthy broker (leader -1 when leaderless). Brokers learn
        of a new topic or a restarted peer a little apart, so an unknown-topic answer is retried for a while."""
        deadline = time.monotonic() + timeout_s
        last: Exception | None = None
        while True:
            for node_id in self.healthy_nodes() or self.node_ids():
                try:
                    md = self.admin([node_id]).list_topics(topic, timeout=5)
                except KafkaException as exc:
                    last = exc
                    continue
                t = md.topics.get(topic)
                if t is not None and t.error is None:
                    return t.partitions
                last = ClusterError(f"topic {topic}: {t.error if t else 'absent'}")
            if time.monotonic() > deadline:
                raise ClusterError(f"No broker answered metadata for {topic}: {last}")
            time.sleep(0.5)

    def leader(self, topic: str, partition: int) -> int:
        """Current leader id of a partition, -1 if it has none."""
        return self.partition_metadata(topic)[partition].leader

    def isr(self, topic: str, partition: int) -> list[int]:
        """Current in-sync replicas of a partition."""
        return sorted(self.partition_metadata(topic)[partition].isrs)

    def replicas(self, topic: str, partition: int) -> list[int]:
        """Assigned replicas of a partition."""
        return list(self.partition_metadata(topic)[partition].replicas)

    def controller(self) -> int:
        """The active controller: the KRaft quorum leader with the highest epoch, or ZooKeeper's controller."""
        if self.spec.metadata == "kraft":
            best = (-1, -1)
            for node_id in self.controllers():
                node = self.node(node_id)
                if node.state() != "running":
                    continue
                code, out = node.sh(f"cat {QUORUM_STATE}")
                if code == 0:
                    state = json.loads(out)
                    best = max(best, (state.get("leaderEpoch", -1), state.get("leaderId", -1)))
            return best[1]
        for node_id in self.healthy_nodes():
            try:
                admin = self.admin([node_id])
                desc = admin.describe_cluster(request_timeout=5).result(timeout=10)
            except KafkaException:
                continue
            return desc.controller.id if desc.controller else -1
        return -1

    @staticmethod
    def wait_for(what: str, check, timeout_s: float = 60.0, every_s: float = 0.5):
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
            raise ClusterError(f"Timed out after {timeout_s:.0f}s waiting for {what} (last seen: {last!r})") from None

    # -- topics ------------------------------------------------------------------------------------------------
    def create_topic(self, name: str, partitions: int, replication_factor: int,
                     config: dict[str, str] | None = None, timeout_s: float = 60.0,
                     replicas: list[int] | None = None) -> None:
        """Create a topic (optionally with every partition on the given brokers, leader rotating) and wait
        until every partition has a leader and its full ISR."""
        cfg = {k: str(v) for k, v in (config or {}).items()}
        if replicas:
            assignment = [replicas[p % len(replicas):] + replicas[:p % len(replicas)] for p in range(partitions)]
            topic = NewTopic(name, partitions, replica_assignment=assignment, config=cfg)
        else:
            topic = NewTopic(name, partitions, replication_factor, config=cfg)
        admin = self.admin()  # keep the handle alive until the future resolves
        for attempt in Retrying(stop=stop_after_delay(timeout_s), wait=wait_fixed(1.0), reraise=True,
                                retry=retry_if_exception(_not_yet)):
            with attempt:
                try:
                    admin.create_topics([topic], request_timeout=30)[name].result(timeout=60)
                except KafkaException as exc:  # an earlier attempt may have created it after all
                    if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                        raise
        self.wait_full_isr(name, timeout_s)

    def wait_full_isr(self, topic: str, timeout_s: float = 60.0) -> None:
        """Wait until every partition of a topic has a leader and all its replicas in the ISR."""
        def full() -> bool:
            parts = self.partition_metadata(topic)
            return bool(parts) and all(p.leader >= 0 and set(p.isrs) == set(p.replicas) for p in parts.values())
        self.wait_for(f"a full ISR on every partition of {topic}", full, timeout_s)

    # -- evidence ------------------------------------------------------------------------------------------------
    def collect_logs(self, directory: Path) -> None:
        """Write each node's full log to DIR/<alias>.log."""
        directory.mkdir(parents=True, exist_ok=True)
        for node in [*self.nodes, *([self.zookeeper] if self.zookeeper else [])]:
            (directory / f"{node.alias}.log").write_text(node.log_text())

    def dump_replica_logs(self, topic: str) -> list[dict]:
        """Every record of every replica of a topic, from each running broker's segment files: copied in parallel,
        then read one broker after another, so a batch the followers hold byte for byte is decoded once."""
        running = [n for n in self.nodes if n.state() == "running"]
        with cf.ThreadPoolExecutor(max_workers=len(running) or 1) as pool:
            copies = list(pool.map(lambda n: node_segments(n, topic), running))
        parsed: Parsed = {}
        return [row for node, segments in zip(running, copies, strict=True) for partition, data in segments
                for row in parse_segment(data, node.node_id, topic, partition, parsed)]


def _not_yet(exc: BaseException) -> bool:
    """A topic creation worth retrying: a retriable error, or fewer brokers registered than its replicas."""
    if not isinstance(exc, KafkaException) or not isinstance(exc.args[0], KafkaError):
        return False
    return exc.args[0].retriable() or exc.args[0].code() == KafkaError.INVALID_REPLICATION_FACTOR


def _cluster_id() -> str:
    """A random KRaft cluster id (URL-safe base64 of a UUID, never starting with '-', which CLIs read as a flag)."""
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid
