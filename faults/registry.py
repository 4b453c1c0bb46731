"""Every fault kind's op, by the name contracts.faultkinds gives it and its traits: what the nemesis
calls when a planned op fires."""

from __future__ import annotations

from contracts.faultkinds import FAULT_KINDS
from faults import failovers, holds, ops, quorum, rolls, tier
from harness import netrules


def _port(ctx: ops.Ctx, node_id: int) -> int:
    return ctx.cluster.node(node_id).external_port or 0


_isolate = ops.grudge_fault(lambda ctx, t: ops.isolate_grudge(ctx.cluster, t))
OPS: dict[str, ops.Op] = {
    "kill": ops.process("kill"),
    "terminate": ops.process("terminate"),
    "pause": ops.process("pause"),
    "restart": ops.restart,
    "power-loss": ops.power_loss,
    "disk-full": ops.disk_fault(lambda s: "full"),
    "disk-slow": ops.disk_fault(lambda s: f"slow {s.latency_ms}"),
    "isolate": _isolate,
    "zombie": _isolate,
    "isolate-controller": _isolate,
    "split": ops.grudge_fault(ops.split),
    "bridge": ops.grudge_fault(ops.bridge),
    "one-way": ops.grudge_fault(ops.one_way),
    "packet-loss": ops.link_fault(lambda ctx, s, t: netrules.lose(s.probability)),
    "latency": holds.latency,
    "hold-requests": holds.hold_requests,
    "bandwidth": ops.link_fault(lambda ctx, s, t: netrules.cap_bandwidth(s.kbit)),
    "tcp-reset": ops.link_fault(lambda ctx, s, t: netrules.block_port(_port(ctx, t), reset=True)),
    "block-clients": ops.link_fault(lambda ctx, s, t: netrules.block_port(_port(ctx, t))),
    "rolling-restart": rolls.rolling("terminate"),
    "hard-rolling-restart": rolls.rolling("kill"),
    "upgrade": rolls.upgrade,
    "migrate": rolls.migrate,
    "quorum-swap": quorum.quorum_swap,
    "last-replica-standing": ops.last_replica_standing,
    "last-replica-power-loss": ops.last_replica_power_loss,
    "unclean-sequence": ops.unclean_sequence,
    "hw-truncation": ops.hw_truncation,
    "stale-hw-isr-join": failovers.stale_hw_isr_join,
    "fast-failover-divergence": failovers.fast_failover_divergence,
    "power-loss-divergence": failovers.power_loss_divergence,
    "remote-full": tier.remote_fault(lambda s: "full"),
    "remote-slow": tier.remote_fault(lambda s: f"slow {s.latency_ms}"),
    "consumer-kill": ops.client_fault("consumers", "kill"),
    "consumer-pause": ops.client_fault("consumers", "pause"),
    "producer-pause": ops.client_fault("producers", "pause"),
    "copier-kill": ops.client_fault("copiers", "kill"),
    "copier-pause": ops.client_fault("copiers", "pause"),
}
if set(OPS) != set(FAULT_KINDS):
    raise ImportError(f"fault ops and contracts.faultkinds differ: {set(OPS) ^ set(FAULT_KINDS)}")
