"""What faults may ask of the cluster and of the consumers: typed interfaces, so faults never import
them."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol


class PartitionInfo(Protocol):
    """One partition's metadata (confluent-kafka's PartitionMetadata has this shape)."""

    id: int
    leader: int
    replicas: list[int]
    isrs: list[int]


class NodeControl(Protocol):
    """One broker's process."""

    external_port: int | None

    def state(self) -> str: ...
    def ip(self) -> str: ...
    def kill(self) -> None: ...
    def terminate(self) -> None: ...
    def pause(self) -> None: ...
    def resume(self) -> None: ...
    def lazyfs(self, command: str) -> dict: ...
    def net_delay(self, queue: int) -> Any: ...


class FirewallControl(Protocol):
    """Network rules between brokers and on their client ports."""

    def partition(self, grudge: dict[int, set[int]], owner: str = "") -> None: ...
    def link_fault(self, node_id: int, fragment: str, owner: str = "") -> None: ...
    def lift(self, owner: str) -> None: ...
    def rules(self, node_id: int) -> str: ...


class MetadataView(Protocol):
    """Who leads, who is in sync, who controls; and waiting for a condition on them."""

    def partitions(self, topic: str) -> dict[int, PartitionInfo]: ...
    def isr(self, topic: str, partition: int) -> list[int]: ...
    def leader(self, topic: str, partition: int) -> int: ...
    def assignment(self, topic: str, partition: int) -> list[int]: ...
    def controller(self) -> int: ...
    def topic_id(self, topic: str) -> str: ...
    def wait_for(self, what: str, check: Callable[[], Any], timeout_s: float = 60.0) -> Any: ...
    def wait_full_isr(self, topic: str, timeout_s: float = 60.0) -> None: ...


class Loss(Protocol):
    """What one broker's power loss dropped."""

    files: int
    bytes: int
    torn: int


class PowerCut(Protocol):
    """A power loss of several brokers: each one's loss, and the time between the first and the last
    to stop."""

    losses: dict[int, Loss]
    spread_s: float


class TierControl(Protocol):
    """The remote tier the brokers share."""

    def lazyfs(self, command: str) -> dict: ...


class MigrationControl(Protocol):
    """KIP-866's steps: a dedicated quorum in migration mode, each node's settings in turn, and
    the controllers' word that the metadata was copied."""

    def start_quorum(self) -> list[int]: ...
    def step(self, node_id: int, phase: Literal["dual-write", "kraft", "controller"]) -> None: ...
    def copied(self) -> bool: ...
    def brokers_on_kraft(self) -> None: ...
    def inventory(self, plant: bool = False) -> list[str]: ...


class QuorumControl(Protocol):
    """A dynamic KRaft quorum's voters (KIP-853): who leads and votes, and changes to them."""

    def status(self) -> tuple[int, list[int]]: ...
    def add(self, node_id: int) -> None: ...
    def remove(self, node_id: int) -> None: ...


class ClusterControl(Protocol):
    """The cluster as faults see it."""

    firewall: FirewallControl
    metadata: MetadataView
    tier: TierControl | None
    releases: dict[int, str]  # the Kafka release each broker runs
    migration: MigrationControl
    quorum: QuorumControl | None  # a dynamic quorum's, else None

    def node_ids(self) -> list[int]: ...
    def zookeeper_ids(self) -> list[int]: ...
    def zookeeper_session(self) -> Any: ...
    def node(self, node_id: int) -> NodeControl: ...
    def start_node(self, node_id: int) -> None: ...
    def start_nodes(self, node_ids: Iterable[int]) -> None: ...
    def stopped(self) -> list[int]: ...
    def heal(self) -> None: ...
    def power_off(self, node_ids: list[int], torn: bool) -> PowerCut: ...
    def upgrade_node(self, node_id: int, version: str) -> None: ...
    def finalize_features(self, node_id: int) -> dict[str, str]: ...


class ClientControl(Protocol):
    """A workload client's process (a producer or a consumer) a fault can crash, restart, pause and
    resume."""

    @property
    def alive(self) -> bool: ...

    @property
    def paused(self) -> bool: ...

    def kill(self) -> None: ...
    def start(self) -> Any: ...
    def pause(self) -> None: ...
    def resume(self) -> None: ...


# which of the workload's clients a client fault hits
Aimed = Literal["consumers", "producers", "copiers"]


@dataclass(frozen=True)
class Clients:
    """The workload's client processes a fault may hit (a client's crash or stall is a fault of the
    application, not of Kafka), and the ids whose coordinators `group-coordinator` and
    `txn-coordinator` name."""

    consumers: list[ClientControl] = field(default_factory=list)
    producers: list[ClientControl] = field(default_factory=list)
    copiers: list[ClientControl] = field(default_factory=list)
    group: str = ""
    txn_id: str = ""

    def of(self, which: Aimed) -> list[ClientControl]:
        return {"consumers": self.consumers, "producers": self.producers,
                "copiers": self.copiers}[which]
