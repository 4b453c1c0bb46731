"""What each node of a cluster is told: the settings every chaos run wants, listeners, and its
metadata role."""

from __future__ import annotations

import base64
import random
import socket
import uuid
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from contracts.errors import ClusterError
from contracts.versions import DEFAULT_VERSION, default_metadata, metadata_problem, release
from harness.jars import TIERED_PLUGIN

INTERNAL_PORT, CONTROLLER_PORT, ZK_PORT = 9092, 9093, 2181
# tiered clusters: the listener only the remote-log-metadata producer uses, so that a request
# fault can hold its acknowledgements (link: remote-metadata) and nothing else
REMOTE_METADATA_PORT, REMOTE_METADATA_LISTENER = 9094, "RLMM"
RLMM_PRODUCER_BOOTSTRAP = "rlmm.config.remote.log.metadata.producer.bootstrap.servers"
# How long a silent broker keeps its session, so how soon its partitions move, in either metadata
# mode: ZooKeeper's session (Kafka's default before KIP-537, 18 s since 2.5: a SIGKILLed broker can
# restart that much sooner, see KafkaNode) and KRaft's broker session (9 s by default). Equal, so a
# comparison of the modes compares Kafka.
SESSION_MS = 6000
# published ports are drawn from the span of ports below the ephemeral range
PORT_SPAN, PORT_TRIES = 12_000, 100
_PICKS = random.Random()  # its own generator: a seeded global one must not choose ports
_HANDED: deque[int] = deque(maxlen=64)  # picked but perhaps not yet bound by their containers
ZK_TICK_MS = 2000  # ZooKeeper's tickTime: it expires a session at the first tick past its timeout
# KIP-848 groups take their session and heartbeat from the brokers (45 s and 5 s by default,
# settings known since 3.7): the same 10 s and 1 s the harness gives classic members, so a crashed
# member's partitions move within a run.
CONSUMER_GROUP_TIMING = {"group.consumer.min.session.timeout.ms": "6000",
                         "group.consumer.session.timeout.ms": "10000",
                         "group.consumer.min.heartbeat.interval.ms": "1000",
                         "group.consumer.heartbeat.interval.ms": "1000"}
ZOOKEEPER_PROPERTIES = {"dataDir": "/var/lib/zookeeper", "clientPort": str(ZK_PORT),
                        "admin.enableServer": "false", "maxClientCnxns": "0",
                        "tickTime": str(ZK_TICK_MS), "4lw.commands.whitelist": "*"}


@dataclass
class ClusterSpec:
    """What to start: Kafka version, broker count, metadata mode and broker config overrides."""

    version: str = DEFAULT_VERSION
    brokers: int = 3
    metadata: str = ""  # "kraft" or "zookeeper"; empty: the version's default (KRaft from 3.3)
    config: dict[str, str] = field(default_factory=dict)
    # one broker's settings, over `config`
    node_config: dict[int, dict[str, str]] = field(default_factory=dict)
    lazy_disk: bool = False  # brokers' data on lazyfs, for power-loss faults
    net_delay: bool = False  # netdelay mounted in the brokers, for latency faults
    tiered: bool = False  # a remote tier (KIP-405) on a directory every broker shares
    lazy_tier: bool = False  # that directory on lazyfs, for remote tier faults
    # KIP-853: every node a controller, the first three the voters it is formatted with
    dynamic_quorum: bool = False
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:10])

    def validate(self) -> None:
        """Raise one clear error for a spec no cluster can be started from."""
        if not 1 <= self.brokers <= 5:
            raise ClusterError(f"Expected 1 to 5 brokers but got kafka.brokers={self.brokers}")
        self.metadata = self.metadata or default_metadata(self.version)
        problem = metadata_problem(self.version, self.metadata)
        if problem:
            raise ClusterError(problem)

    def controllers(self) -> list[int]:
        """Node ids of the KRaft controller quorum (static voters, or a dynamic quorum's first
        ones): the first three nodes, or all if fewer."""
        return list(range(1, min(3, self.brokers) + 1))

    def controller_nodes(self) -> list[int]:
        """Node ids that run a KRaft controller: the voters, and with a dynamic quorum every node
        (the others observers until one is added)."""
        return list(range(1, self.brokers + 1)) if self.dynamic_quorum else self.controllers()


def _ephemeral_low() -> int:
    """The first port of the host's ephemeral range, from which connections take source ports."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now, below the ephemeral range (a port from it can become
    a connection's source port before a container binds it) and not handed out lately here."""
    low = _ephemeral_low()
    for port in _PICKS.sample(range(max(1024, low - PORT_SPAN), low), PORT_TRIES):
        if port in _HANDED:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _HANDED.append(port)
        return port
    raise ClusterError(f"no free TCP port on 127.0.0.1 below {low} in {PORT_TRIES} tries. Hint: "
                       "stop what listens there, or remove clusters left running (docker ps)")


def cluster_id() -> str:
    """A random KRaft cluster id (URL-safe base64 of a UUID, never starting with '-', which CLIs
    read as a flag)."""
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


def broker_defaults(brokers: int) -> dict[str, str]:
    """Broker settings a chaos run wants whatever the scenario: fast rebalances, no auto-created
    topics, and few internal partitions (a SIGKILLed broker recovers every partition it hosts before
    it starts, so Kafka's 50 __consumer_offsets partitions would triple its restart)."""
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


REMOTE_DIR = "/var/lib/kafka/remote"  # the shared remote tier, in every broker's container


def tiered_defaults(brokers: int) -> dict[str, str]:
    """Tiered storage on Kafka's LocalTieredStorage over the shared directory, with the default
    topic-based metadata manager; its tasks run every second, so segments upload and expire within a
    run."""
    rf = str(min(3, brokers))
    return {
        "remote.log.storage.system.enable": "true",
        "remote.log.storage.manager.class.name": TIERED_PLUGIN,
        "remote.log.storage.manager.impl.prefix": "rsm.config.",
        "rsm.config.dir": REMOTE_DIR,
        "remote.log.metadata.manager.listener.name": "INTERNAL",
        "remote.log.metadata.manager.impl.prefix": "rlmm.config.",
        "rlmm.config.remote.log.metadata.topic.replication.factor": rf,
        "rlmm.config.remote.log.metadata.topic.num.partitions": rf,
        "remote.log.manager.task.interval.ms": "1000",
        "log.retention.check.interval.ms": "1000",
    }


def harness_settings(spec: ClusterSpec) -> dict[str, str]:
    """The broker settings the harness adds that change Kafka's behaviour and the scenario does not
    set itself (its listeners, roles and paths aside)."""
    session = ("zookeeper.session.timeout.ms"
               if (spec.metadata or default_metadata(spec.version)) == "zookeeper"
               else "broker.session.timeout.ms")
    props = broker_defaults(spec.brokers) | {session: str(SESSION_MS)}
    props |= CONSUMER_GROUP_TIMING if release(spec.version) >= (3, 7) else {}
    props |= tiered_defaults(spec.brokers) if spec.tiered else {}
    plumbing = {"log.dirs", "inter.broker.listener.name", "rsm.config.dir",
                "remote.log.metadata.manager.listener.name", RLMM_PRODUCER_BOOTSTRAP}
    return {k: v for k, v in props.items() if k not in plumbing and k not in spec.config}


def broker_properties(spec: ClusterSpec, node_id: int, alias: str, external_port: int) -> dict[
        str, str]:
    """One broker's server.properties: defaults, its listeners, its role (KRaft voter or ZooKeeper
    client), then the scenario's overrides and this broker's own."""
    props = broker_defaults(spec.brokers)
    if release(spec.version) >= (3, 7):
        props |= CONSUMER_GROUP_TIMING
    if spec.tiered:
        props |= tiered_defaults(spec.brokers)
    listeners = {"INTERNAL": INTERNAL_PORT, "EXTERNAL": external_port}
    if spec.metadata == "zookeeper":
        props |= {"broker.id": str(node_id), "zookeeper.connect": f"zookeeper:{ZK_PORT}",
                  "zookeeper.session.timeout.ms": str(SESSION_MS)}
    else:
        controllers = spec.controller_nodes()
        if node_id in controllers:
            listeners["CONTROLLER"] = CONTROLLER_PORT
        props |= {
            "process.roles": "broker,controller" if node_id in controllers else "broker",
            "node.id": str(node_id),
            **({"controller.quorum.bootstrap.servers": ",".join(
                f"kafka-{v}:{CONTROLLER_PORT}" for v in controllers)} if spec.dynamic_quorum else
               {"controller.quorum.voters": ",".join(
                   f"{v}@kafka-{v}:{CONTROLLER_PORT}" for v in controllers)}),
            "controller.listener.names": "CONTROLLER",
            "broker.session.timeout.ms": str(SESSION_MS),
        }
    advertised = f"INTERNAL://{alias}:{INTERNAL_PORT},EXTERNAL://127.0.0.1:{external_port}"
    protocols = "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT"
    if spec.tiered:
        listeners[REMOTE_METADATA_LISTENER] = REMOTE_METADATA_PORT
        advertised += f",{REMOTE_METADATA_LISTENER}://{alias}:{REMOTE_METADATA_PORT}"
        protocols += f",{REMOTE_METADATA_LISTENER}:PLAINTEXT"
        props[RLMM_PRODUCER_BOOTSTRAP] = f"{alias}:{REMOTE_METADATA_PORT}"
    if spec.dynamic_quorum and "CONTROLLER" in listeners:
        # add-controller gives the quorum this endpoint; left out, Kafka took the listener's
        # 0.0.0.0, and voters sent that controller's votes to themselves
        advertised += f",CONTROLLER://{alias}:{CONTROLLER_PORT}"
    props |= {
        "listeners": ",".join(f"{name}://0.0.0.0:{port}" for name, port in listeners.items()),
        "advertised.listeners": advertised,
        "listener.security.protocol.map": protocols,
    }
    return props | {k: str(v) for k, v in spec.config.items()} | spec.node_config.get(node_id, {})
