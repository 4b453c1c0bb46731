"""Every fault kind, once: its name, its op, its default target and what it aims at. The scenario model's
lists and defaults derive from this table (as validation context)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from contracts.measured import Stop
from faults import failovers, ops
from harness import netrules


@dataclass(frozen=True)
class FaultKind:
    """One registry entry."""

    name: str
    op: ops.Op
    default_target: str = "one"
    # itself: victims chosen from live metadata; producers, consumers, copiers: the workload's client processes
    aims: Literal["brokers", "consumers", "producers", "copiers", "itself"] = "brokers"
    restarts: Literal["none", "once", "each"] = "none"  # broker restarts an op waits for: none, one, each broker
    restart_after: Stop = "kill"  # how its brokers stop before those restarts: which measured figure plans them
    lazy_disk: bool = False  # needs the brokers' data directories on lazyfs
    net_delay: bool = False  # needs netdelay in the brokers' containers
    params: frozenset[str] = frozenset()  # the kind-specific FaultSpec fields its op reads

    def busy_s(self, hold: float, brokers: int, restart_s: float) -> float:
        """About how long one op keeps its line busy: its hold and the broker restarts it waits for."""
        return hold + {"none": 0, "once": restart_s, "each": brokers * restart_s}[self.restarts]

    @property
    def needs_targets(self) -> bool:
        """Whether the nemesis resolves broker targets before the op runs."""
        return self.aims == "brokers"


def _port(ctx: ops.Ctx, node_id: int) -> int:
    return ctx.cluster.node(node_id).external_port or 0


_isolate = ops.grudge_fault(lambda ctx, t: ops.isolate_grudge(ctx.cluster, t))
KINDS: dict[str, FaultKind] = {k.name: k for k in (
    FaultKind("kill", ops.process("kill"), restarts="once"),
    FaultKind("terminate", ops.process("terminate"), restarts="once", restart_after="clean"),
    FaultKind("pause", ops.process("pause")),
    FaultKind("restart", ops.restart, restarts="once", restart_after="clean"),
    FaultKind("power-loss", ops.power_loss, restarts="once", lazy_disk=True, params=frozenset({"torn"})),
    FaultKind("disk-full", ops.disk_fault(lambda s: "full"), restarts="once", lazy_disk=True),
    FaultKind("disk-slow", ops.disk_fault(lambda s: f"slow {s.latency_ms}"), lazy_disk=True,
              params=frozenset({"latency_ms"})),
    FaultKind("isolate", _isolate),
    FaultKind("zombie", _isolate, default_target="leader"),
    FaultKind("isolate-controller", _isolate, default_target="controller"),
    FaultKind("split", ops.grudge_fault(ops.split)),
    FaultKind("bridge", ops.grudge_fault(ops.bridge)),
    FaultKind("one-way", ops.grudge_fault(ops.one_way)),
    FaultKind("packet-loss", ops.link_fault(lambda ctx, s, t: netrules.lose(s.probability)),
              params=frozenset({"probability"})),
    FaultKind("latency", ops.latency, net_delay=True, params=frozenset({"latency_ms", "jitter_ms", "link"})),
    FaultKind("bandwidth", ops.link_fault(lambda ctx, s, t: netrules.cap_bandwidth(s.kbit)),
              params=frozenset({"kbit"})),
    FaultKind("tcp-reset", ops.link_fault(lambda ctx, s, t: netrules.block_port(_port(ctx, t), reset=True))),
    FaultKind("block-clients", ops.link_fault(lambda ctx, s, t: netrules.block_port(_port(ctx, t)))),
    FaultKind("rolling-restart", ops.rolling("terminate"), aims="itself", restarts="each", restart_after="clean"),
    FaultKind("hard-rolling-restart", ops.rolling("kill"), aims="itself", restarts="each"),
    FaultKind("last-replica-standing", ops.last_replica_standing, aims="itself", restarts="once"),
    FaultKind("last-replica-power-loss", ops.last_replica_power_loss, aims="itself", restarts="once",
              lazy_disk=True, params=frozenset({"torn"})),
    FaultKind("unclean-sequence", ops.unclean_sequence, aims="itself", restarts="once"),
    FaultKind("hw-truncation", ops.hw_truncation, aims="itself", restarts="each"),
    FaultKind("stale-hw-isr-join", failovers.stale_hw_isr_join, aims="itself", restarts="each"),
    FaultKind("fast-failover-divergence", failovers.fast_failover_divergence, aims="itself", restarts="each"),
    FaultKind("power-loss-divergence", failovers.power_loss_divergence, aims="itself", restarts="each",
              lazy_disk=True),
    FaultKind("consumer-kill", ops.client_fault("consumers", "kill"), aims="consumers"),
    FaultKind("consumer-pause", ops.client_fault("consumers", "pause"), aims="consumers"),
    FaultKind("producer-pause", ops.client_fault("producers", "pause"), aims="producers"),
    FaultKind("copier-kill", ops.client_fault("copiers", "kill"), aims="copiers"),
    FaultKind("copier-pause", ops.client_fault("copiers", "pause"), aims="copiers"),
)}
