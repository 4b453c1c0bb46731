"""Every fault kind's traits, once: what it aims at, its default target, the broker restarts it
waits for, what the brokers need for it, which fields it reads, and what it does to data.
faults.registry binds each to its op."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from contracts.measured import Stop

# which of the workload's clients a client fault hits
Aimed = Literal["consumers", "producers", "copiers"]
# itself: it picks its victims from live metadata; tier: the remote tier the brokers share
Aim = Literal["brokers", "itself", "tier"] | Aimed


@dataclass(frozen=True)
class FaultKind:
    """One fault kind's traits; its name is what a scenario's `fault:` says."""

    name: str
    default_target: str = "one"
    aims: Aim = "brokers"
    # broker restarts an op waits for: none, one, each broker
    restarts: Literal["none", "once", "each"] = "none"
    # how its brokers stop before those restarts: which measured figure plans them
    restart_after: Stop = "kill"
    lazy_disk: bool = False  # needs the brokers' data directories on lazyfs
    net_delay: bool = False  # needs netdelay in the brokers' containers
    lazy_tier: bool = False  # needs the shared remote tier on lazyfs
    # the kind-specific FaultSpec fields its op reads (FAULT_PARAMS)
    params: frozenset[str] = frozenset()
    zookeeper_only: bool = False  # it reads and triggers elections through ZooKeeper
    migrates: bool = False  # it moves the cluster from ZooKeeper to KRaft (KIP-866)
    # it changes the KRaft voters (KIP-853): the cluster is formatted with a dynamic quorum
    dynamic_quorum: bool = False
    once: bool = False  # a line of it fires one op, however long the run
    # the brokers its op holds from other lines' ops: all of them for the op's whole time, or each
    # in turn while the op works on it
    claims: Literal["all", "each"] = "all"
    # what it does to unflushed data: nothing, a power loss of its targets, or of the last in-sync
    # replica (while the other replicas crash keeping their logs, in KIP-101's second scenario)
    power_loss: Literal["none", "targets", "last-replica", "last-replica-others-crash"] = "none"

    def busy_s(self, hold: float, brokers: int, restart_s: float) -> float:
        """About how long one op keeps its line busy: its hold and the broker restarts it waits
        for."""
        return hold + {"none": 0, "once": restart_s, "each": brokers * restart_s}[self.restarts]

    @property
    def needs_targets(self) -> bool:
        """Whether the nemesis resolves broker targets before the op runs."""
        return self.aims == "brokers"


def _kinds(*kinds: FaultKind) -> dict[str, FaultKind]:
    return {k.name: k for k in kinds}


FAULT_KINDS = _kinds(
    FaultKind("kill", restarts="once"),
    FaultKind("terminate", restarts="once", restart_after="clean"),
    FaultKind("pause"),
    FaultKind("restart", restarts="once", restart_after="clean"),
    FaultKind("power-loss", restarts="once", lazy_disk=True, params=frozenset({"torn"}),
              power_loss="targets"),
    FaultKind("disk-full", restarts="once", lazy_disk=True),
    FaultKind("disk-slow", lazy_disk=True, params=frozenset({"latency_ms"})),
    FaultKind("isolate"),
    FaultKind("zombie", default_target="leader"),
    FaultKind("isolate-controller", default_target="controller"),
    FaultKind("split"),
    FaultKind("bridge"),
    FaultKind("one-way"),
    FaultKind("packet-loss", params=frozenset({"probability"})),
    FaultKind("latency", net_delay=True, params=frozenset({"latency_ms", "jitter_ms", "link"})),
    FaultKind("hold-requests", default_target="txn-coordinator", net_delay=True,
              params=frozenset({"latency_ms", "request", "link", "direction",
                                "action", "error", "client_id"})),
    FaultKind("bandwidth", params=frozenset({"kbit"})),
    FaultKind("tcp-reset"),
    FaultKind("block-clients"),
    FaultKind("rolling-restart", aims="itself", restarts="each", restart_after="clean"),
    FaultKind("hard-rolling-restart", aims="itself", restarts="each"),
    FaultKind("upgrade", aims="itself", restarts="each", restart_after="clean",
              params=frozenset({"to", "rollback"}), once=True, claims="each"),
    FaultKind("migrate", aims="itself", restarts="each", restart_after="clean", once=True,
              claims="each", migrates=True),
    FaultKind("quorum-swap", aims="itself", restarts="once", params=frozenset({"disrupt"}),
              claims="each", dynamic_quorum=True),
    FaultKind("last-replica-standing", aims="itself", restarts="once"),
    FaultKind("last-replica-power-loss", aims="itself", restarts="once", lazy_disk=True,
              params=frozenset({"torn"}), power_loss="last-replica"),
    FaultKind("unclean-sequence", aims="itself", restarts="once"),
    FaultKind("hw-truncation", aims="itself", restarts="each"),
    FaultKind("stale-hw-isr-join", aims="itself", restarts="each", zookeeper_only=True),
    FaultKind("fast-failover-divergence", aims="itself", restarts="each", zookeeper_only=True),
    FaultKind("power-loss-divergence", aims="itself", restarts="each", lazy_disk=True,
              zookeeper_only=True, power_loss="last-replica-others-crash"),
    FaultKind("remote-full", aims="tier", lazy_tier=True),
    FaultKind("remote-slow", aims="tier", lazy_tier=True, params=frozenset({"latency_ms"})),
    FaultKind("consumer-kill", aims="consumers"),
    FaultKind("consumer-pause", aims="consumers"),
    FaultKind("producer-pause", aims="producers"),
    FaultKind("copier-kill", aims="copiers"),
    FaultKind("copier-pause", aims="copiers"),
)
