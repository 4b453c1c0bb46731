"""Faults of the remote tier the brokers share: its writes refused or slowed, through the lazyfs
between the brokers and its directory."""

from __future__ import annotations

from collections.abc import Callable

from contracts.errors import ClusterError
from contracts.scenario import FaultSpec
from faults.ops import Ctx, NoEffect, Op


def remote_fault(command: Callable[[FaultSpec], str]) -> Op:
    """Make the remote tier full (every write refused with ENOSPC) or slow (each write and fsync
    delayed) for the op's hold, then heal it; no write reaching it in the hold is no effect."""
    def run(ctx: Ctx, spec: FaultSpec, targets: list[int]) -> dict:
        tier = ctx.cluster.tier
        if tier is None:
            raise ClusterError(f"{spec.fault} needs the remote tier on lazyfs; this cluster has "
                               "none")
        action = command(spec)
        try:
            tier.lazyfs(action)
            ctx.hold(spec.for_)
        finally:
            healed = tier.lazyfs("heal")["faults"]
        if not (healed["refused"] or healed["slowed"]):
            raise NoEffect(f"{spec.fault}: no write or fsync reached the remote tier")
        return {"action": action, "tier": healed}
    return run
