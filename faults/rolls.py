"""Ops that take every broker in turn: kafkatest's rolling restarts, Kafka's rolling upgrade, and
its migration from ZooKeeper to KRaft."""

from __future__ import annotations

import time

from contracts.errors import ClusterError
from contracts.scenario import FaultSpec
from faults.ops import Ctx, NoEffect, Op, Stalled, break_node

FULL_ISR_S = 180.0  # how long a roll waits for a full ISR before the next broker


def rolling(action: str) -> Op:
    """kafkatest's clean_bounce / hard_bounce: each broker in turn, waiting for a full ISR in
    between (Stalled if one never fills)."""
    def run(ctx: Ctx, spec: FaultSpec, targets: list[int]) -> dict:
        bounced = []
        for t in sorted(targets or ctx.cluster.node_ids()):
            if ctx.stop.is_set():
                break
            break_node(ctx, action, t)
            ctx.cluster.start_node(t)
            bounced.append(t)
            _full_isr_after(ctx, f"{action} roll: broker {t} restarted")
        return {"action": action, "bounced": bounced}
    return run


def upgrade(ctx: Ctx, spec: FaultSpec, targets: list[int]) -> dict:
    """Kafka's rolling upgrade: each broker in turn stops cleanly and starts on release `to` with
    its data, the ISR full before the next (other lines' ops go on, on the other brokers); then the
    feature levels are finalized, or with `rollback` each broker rolls back to its release."""
    assert spec.to is not None
    nodes = ctx.cluster.node_ids()
    began, start = time.monotonic(), {t: ctx.cluster.releases[t] for t in nodes}
    rolled = _roll_to(ctx, dict.fromkeys(nodes, spec.to), began)
    if not rolled:
        raise NoEffect(f"upgrade: every broker already ran Kafka {spec.to}")
    if spec.rollback:
        rolled += _roll_to(ctx, start, began)
    return {"to": spec.to, "rolled": rolled,
            "finalized": {} if spec.rollback else _finalize(ctx, spec.to),
            "took_s": round(time.monotonic() - began, 1)}


def _roll_to(ctx: Ctx, releases: dict[int, str], began: float) -> list[dict]:
    """Each broker in turn onto its release in `releases`, the ISR full before the next; raises
    NoEffect if the run ended before every one got there, Stalled if an ISR never filled."""
    rolled: list[dict] = []
    for t, to in releases.items():
        was = ctx.cluster.releases[t]
        if was == to:
            continue
        with ctx.holding(t) as held:
            if not held:
                break
            ctx.expect_state(t, "running", "upgrade found it not running")
            ctx.cluster.upgrade_node(t, to)
        rolled.append({"broker": t, "from": was, "to": to,
                       "at_s": round(time.monotonic() - began, 1)})
        _full_isr_after(ctx, f"upgrade: broker {t} onto {to}")
    if left := sorted(t for t, to in releases.items() if ctx.cluster.releases[t] != to):
        raise NoEffect(f"upgrade: the run ended with brokers {left} not yet on "
                       f"{releases[left[0]]} (rolled: {[r['broker'] for r in rolled]}); raise "
                       "duration")
    return rolled


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


COPY_S = 180.0  # how long the controllers may take to copy the metadata, every broker registered
# refusals by one controller that mean a driver retrying a stale version, not a write fenced once
# as leadership moved
WEDGED = 10


def migrate(ctx: Ctx, spec: FaultSpec, targets: list[int]) -> dict:
    """KIP-866's migration, as Kafka 3.9's docs order it: a dedicated quorum in migration mode; each
    broker in turn rolled into dual writes; the metadata copied, and the cluster left in dual-write
    mode for the op's `for` (an operator's validation); each broker rolled into KRaft mode; each
    controller rolled out of migration mode. Other lines' ops go on throughout."""
    began, m, brokers = time.monotonic(), ctx.cluster.migration, ctx.cluster.node_ids()
    before = m.inventory(plant=True)
    done: dict[str, object] = {"controllers": m.start_quorum()}
    try:
        for phase, nodes in (("dual-write", brokers), ("kraft", brokers),
                             ("controller", done["controllers"])):
            rolled = _roll(ctx, phase, nodes)
            done[phase] = rolled
            if len(rolled) < len(nodes):
                raise NoEffect(f"migrate: the run ended with {phase} rolled on {rolled} of "
                               f"{nodes}; raise duration (done: {done})")
            if phase == "dual-write":
                try:
                    ctx.cluster.metadata.wait_for(
                        "the controllers to copy the metadata from ZooKeeper", m.copied, COPY_S)
                except ClusterError as exc:
                    raise Stalled(f"migrate: {exc}") from exc
                done["copied_at_s"] = round(time.monotonic() - began, 1)
                ctx.hold(spec.for_)
            elif phase == "kraft":
                m.brokers_on_kraft()
    except NoEffect as exc:  # Stalled too
        refused = m.conflicts()
        if max(refused.values(), default=0) >= WEDGED:  # the likelier reason it never finished
            raise Stalled(f"migrate: {_refused(refused)}; {str(exc).removeprefix('migrate: ')}"
                          ) from exc
        raise
    return done | {"took_s": round(time.monotonic() - began, 1), "conflicts": m.conflicts(),
                   "inventory": {"before": before, "after": m.inventory()}}


def _refused(conflicts: dict[int, int]) -> str:
    """The dual writes ZooKeeper refused on /migration's version, in all and by controller."""
    each = ", ".join(f"{n} by controller {i}" for i, n in sorted(conflicts.items()))
    return (f"ZooKeeper refused {sum(conflicts.values())} dual writes on /migration's version "
            f"({each}), the migration driver's wedge (docs/findings/kraft-migration-driver-wedged)")


def _roll(ctx: Ctx, phase: str, nodes: list[int]) -> list[int]:
    """Step each node into a migration phase in turn, held from other lines' ops meanwhile, the
    ISR full after each broker; the nodes stepped before the run ended."""
    rolled = []
    for t in nodes:
        with ctx.holding(t) as held:
            if not held:
                break
            ctx.expect_state(t, "running", f"migrate ({phase}) found it not running")
            ctx.cluster.migration.step(t, phase)
        rolled.append(t)
        if phase != "controller":
            _full_isr_after(ctx, f"migrate: broker {t} into {phase}")
    return rolled


def _full_isr_after(ctx: Ctx, step: str) -> None:
    """Wait for a full ISR after a roll's step; one that never comes is a liveness finding (the
    cluster stalled), not a harness error."""
    try:
        ctx.cluster.metadata.wait_full_isr(ctx.topic, timeout_s=FULL_ISR_S)
    except ClusterError as exc:
        raise Stalled(f"{step}, then no full ISR on {ctx.topic}: {exc}") from exc
