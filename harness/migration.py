"""KIP-866's ZooKeeper-to-KRaft migration as Kafka 3.9's operations docs give it: each node's
settings in each phase, and the controllers' word that the metadata was copied."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from contracts.errors import ClusterError
from harness import inventory
from harness.archive import put_file
from harness.broker_config import (
    CONTROLLER_PORT,
    SESSION_MS,
    ZK_PORT,
    ClusterSpec,
    broker_defaults,
)

if TYPE_CHECKING:
    from harness.cluster import Cluster

# a node's settings in turn: a broker's on ZooKeeper and registered with KRaft, a broker's in KRaft
# mode, a controller's out of migration mode
Phase = Literal["dual-write", "kraft", "controller"]
CONTROLLER_IDS = (3001, 3002, 3003)  # the dedicated quorum's node ids, apart from the brokers'
SETTINGS_DIR, SETTINGS_FILE = "/opt/kafka", "node.properties"  # start.sh prefers it to its env
COPIED = "Completed migration of metadata from ZooKeeper to KRaft"  # the active controller's line
# ZooKeeper refusing a dual write on /migration's version: a driver retrying it with the version it
# had is wedged until it loses leadership (docs/findings/kraft-migration-driver-wedged)
CONFLICT = "BadVersion for /migration"
MIGRATION = {"zookeeper.metadata.migration.enable": "true"}
ZK_KEYS = ("broker.id", "zookeeper.connect", "zookeeper.session.timeout.ms",
           "zookeeper.metadata.migration.enable", "inter.broker.protocol.version")


def alias(node_id: int) -> str:
    """A dedicated controller's name on the cluster network."""
    return f"controller-{node_id}"


def _quorum() -> dict[str, str]:
    voters = ",".join(f"{i}@{alias(i)}:{CONTROLLER_PORT}" for i in CONTROLLER_IDS)
    return {"controller.quorum.voters": voters, "controller.listener.names": "CONTROLLER"}


def controller(spec: ClusterSpec, node_id: int, migrating: bool) -> dict[str, str]:
    """A dedicated controller's settings: in migration mode (ZooKeeper's address, the brokers'
    listener) until the brokers run KRaft. It elects leaders, so it takes the scenario's settings
    too."""
    props = broker_defaults(spec.brokers) | _quorum() | {
        "process.roles": "controller", "node.id": str(node_id),
        "listeners": f"CONTROLLER://0.0.0.0:{CONTROLLER_PORT}",
        "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT,"
                                          "CONTROLLER:PLAINTEXT",
        "broker.session.timeout.ms": str(SESSION_MS)}
    # ZooKeeper's session stays at Kafka's default, 18 s. A controller holds no ephemeral znode (it
    # writes /controller as persistent), so a shorter one speeds no failover. The brokers'
    # SESSION_MS would let a 4 s ZooKeeper stall drop a dual write's answer and wedge the driver.
    if migrating:
        props |= MIGRATION | {"zookeeper.connect": f"zookeeper:{ZK_PORT}"}
    return props | {k: str(v) for k, v in spec.config.items()}


def dual_write(props: dict[str, str], version: str) -> dict[str, str]:
    """A ZooKeeper-mode broker's settings for the migration: still on ZooKeeper, now also
    registered with the KRaft quorum."""
    return props | MIGRATION | _quorum() | {
        "inter.broker.protocol.version": ".".join(version.split(".")[:2])}


def kraft_broker(props: dict[str, str], node_id: int) -> dict[str, str]:
    """A migrated broker's settings in KRaft mode: ZooKeeper's gone, the quorum stays."""
    kept = {k: v for k, v in props.items() if k not in ZK_KEYS}
    return kept | _quorum() | {"process.roles": "broker", "node.id": str(node_id),
                               "broker.session.timeout.ms": str(SESSION_MS)}


def settings_file(props: dict[str, str]) -> bytes:
    """A node's server.properties as start.sh reads it."""
    return "".join(f"{k}={v}\n" for k, v in sorted(props.items())).encode()


class Migration:
    """KIP-866's steps on one ZooKeeper-mode cluster, for the fault op that orders them."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster

    def start_quorum(self) -> list[int]:
        """Start the dedicated controllers in migration mode, formatted with the cluster id
        ZooKeeper holds; return their ids."""
        c = self.cluster
        admin = c.metadata.admin()  # kept alive until the answer came
        described = admin.describe_cluster(request_timeout=10).result(timeout=20)
        if not described.cluster_id:
            raise ClusterError("the brokers named no cluster id to format the controllers with")
        for i in CONTROLLER_IDS:
            c.add_controller(i, described.cluster_id, controller(c.spec, i, migrating=True))
        for node in c.controllers:
            node.wait_started(120)
        return list(CONTROLLER_IDS)

    def step(self, node_id: int, phase: Phase) -> None:
        """An operator's step on one node: a clean stop, the phase's settings, and a start with
        the data it had."""
        c = self.cluster
        node = c.node(node_id)
        props = {"dual-write": lambda: dual_write(node.properties, c.spec.version),
                 "kraft": lambda: kraft_broker(node.properties, node_id),
                 "controller": lambda: controller(c.spec, node_id, migrating=False)}[phase]()
        node.terminate()
        put_file(node.container, SETTINGS_DIR, SETTINGS_FILE, settings_file(props))
        node.properties = props
        if phase == "kraft":
            node.role = "kraft"  # how its start shows in its log
        c.start_node(node_id)

    def inventory(self, plant: bool = False) -> list[str]:
        """The metadata the migration must keep (harness.inventory), a SCRAM user planted first
        when `plant`."""
        admin = self.cluster.metadata.admin()  # kept alive until the answers came
        if plant:
            inventory.plant(admin)
        return inventory.entries(admin)

    def copied(self) -> bool:
        """Whether a controller said the metadata was copied from ZooKeeper (the cluster then
        stays in dual writes, whichever controller leads)."""
        return any(COPIED in n.log_text() for n in self.cluster.controllers)

    def conflicts(self) -> dict[int, int]:
        """How many dual writes ZooKeeper refused on /migration's version, by controller (those
        that logged any)."""
        found = {n.node_id: n.log_text().count(CONFLICT) for n in self.cluster.controllers}
        return {i: n for i, n in found.items() if n}

    def brokers_on_kraft(self) -> None:
        """Every broker runs KRaft: metadata queries ask the quorum from now on."""
        self.cluster.spec.metadata = "kraft"
