"""Ops that take every broker in turn: kafkatest's rolling restarts, and Kafka's rolling upgrade."""

from __future__ import annotations

import time

from contracts.scenario import FaultSpec
from faults.ops import Ctx, NoEffect, Op, break_node

FULL_ISR_S = 180.0  # how long a roll waits for a full ISR before the next broker


def rolling(action: str) -> Op:
    """kafkatest's clean_bounce / hard_bounce: each broker in turn, waiting for a full ISR in
    between."""
    def run(ctx: Ctx, spec: FaultSpec, targets: list[int]) -> dict:
        bounced = []
        for t in sorted(targets or ctx.cluster.node_ids()):
            if ctx.stop.is_set():
                break
            break_node(ctx, action, t)
            ctx.cluster.start_node(t)
            bounced.append(t)
            ctx.cluster.metadata.wait_full_isr(ctx.topic, timeout_s=90)
        return {"action": action, "bounced": bounced}
    return run


def upgrade(ctx: Ctx, spec: FaultSpec, targets: list[int]) -> dict:
    """Kafka's rolling upgrade: each broker in turn stops cleanly and starts on release `to` with
    its data, the ISR full before the next (other lines' ops go on, on the other brokers); then the
    feature levels are finalized. The row says when each broker came back on `to`."""
    assert spec.to is not None
    began, rolled = time.monotonic(), []
    for t in ctx.cluster.node_ids():
        was = ctx.cluster.releases[t]
        if was == spec.to:
            continue
        with ctx.holding(t) as held:
            if not held:
                break
            ctx.expect_state(t, "running", "upgrade found it not running")
            ctx.cluster.upgrade_node(t, spec.to)
        rolled.append({"broker": t, "from": was, "at_s": round(time.monotonic() - began, 1)})
        ctx.cluster.metadata.wait_full_isr(ctx.topic, timeout_s=FULL_ISR_S)
    if not rolled:
        raise NoEffect(f"upgrade: every broker already ran Kafka {spec.to}")
    if left := sorted(t for t, v in ctx.cluster.releases.items() if v != spec.to):
        raise NoEffect(f"upgrade: the run ended with brokers {left} not yet on {spec.to} (rolled: "
                       f"{[r['broker'] for r in rolled]}); raise duration")
    return {"to": spec.to, "rolled": rolled, "finalized": _finalize(ctx, spec.to),
            "took_s": round(time.monotonic() - began, 1)}


def _finalize(ctx: Ctx, to: str) -> dict[str, str]:
    """Finalize the feature levels from a running broker, held from other lines' ops meanwhile (a
    kill in the middle of Kafka's tool fails it)."""
    for t in ctx.cluster.node_ids():
        with ctx.holding(t) as held:
            if not held:
                break
            if ctx.cluster.node(t).state() == "running":
                return ctx.cluster.finalize_features(t)
    raise NoEffect(f"upgrade: every broker ran {to}, but the run ended before the feature levels "
                   "were finalized; raise duration")
