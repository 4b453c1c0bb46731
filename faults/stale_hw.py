"""KAFKA-7128's sequence (fixed in 2.0.1): a lagging replica joins the ISR at a new leader's stale high watermark
and is elected when the others die (docs/DESIGN.md, "Kafka versions and known bugs", says how the race is widened)."""

from __future__ import annotations

import time
from collections.abc import Callable

from contracts.scenario import FaultSpec
from faults.ops import Ctx, NoEffect, _break, off_controller
from harness.zookeeper import PartitionState

JOIN_TIMEOUT_S = 90.0


def _await(ctx: Ctx, what: str, check, timeout_s: float, every_s: float = 0.1) -> float:
    """Poll `check` until true; return when it became true (monotonic), or raise NoEffect naming `what`."""
    deadline = time.monotonic() + timeout_s
    while not ctx.stop.is_set() and time.monotonic() < deadline:
        if check():
            return time.monotonic()
        time.sleep(every_s)
    if ctx.stop.is_set():
        raise NoEffect(f"stale-hw-isr-join: the run ended before {what}")
    raise NoEffect(f"stale-hw-isr-join: {what} did not happen within {timeout_s:.0f} s")


def _lead_from_second(ctx: Ctx, state: Callable[[], PartitionState], partition: int, preferred: int,
                      second: int) -> None:
    """Move leadership to the second replica with the preferred one back in the ISR (kill and restart it)."""
    leader = state().leader
    if leader not in (preferred, second):
        raise NoEffect(f"stale-hw-isr-join: partition {partition} is led by broker {leader}, the replica meant to lag")
    if leader == preferred:
        _break(ctx, "kill", preferred)
        _await(ctx, f"broker {second} leading", lambda: state().leader == second, 30)
        ctx.cluster.start_node(preferred)
    _await(ctx, f"broker {preferred} back in the ISR", lambda: preferred in state().isr, 60, every_s=0.5)


def stale_hw_isr_join(ctx: Ctx, spec: FaultSpec, targets: list[int]) -> dict:
    """Restart the lagging replica cut off from the leader (out of the ISR, behind); after `for`, cut the leader off
    from the preferred replica and elect the preferred one; when the lagging one joins the ISR, kill the old leader,
    then the new one. Both restart after `for`. The row has the ISR at the kill and how long the join took."""
    partition, _ = off_controller(ctx)
    preferred, leader, lagging = ctx.cluster.metadata.assignment(ctx.topic, partition)
    with ctx.cluster.zookeeper_session() as zk:
        state = lambda: zk.partition(ctx.topic, partition)  # noqa: E731
        _lead_from_second(ctx, state, partition, preferred, leader)
        try:
            ctx.cluster.firewall.partition({lagging: {leader}, leader: {lagging}}, ctx.owner)
            _break(ctx, "kill", lagging)
            ctx.cluster.start_node(lagging)
            if lagging in state().isr:
                raise NoEffect(f"broker {lagging} rejoined the ISR of partition {partition} after its restart")
            ctx.hold(spec.for_)
            ctx.cluster.firewall.partition({lagging: {leader}, leader: {lagging, preferred}, preferred: {leader}},
                                           ctx.owner)
            zk.elect_preferred(ctx.topic, partition)
            elected = _await(ctx, f"broker {preferred} elected", lambda: state().leader == preferred, 30)
            joined = _await(ctx, f"broker {lagging} joining the ISR", lambda: lagging in state().isr, JOIN_TIMEOUT_S)
            isr = list(state().isr)
            for node in (leader, preferred):
                _break(ctx, "kill", node)
        finally:
            ctx.cluster.firewall.lift(ctx.owner)
    ctx.hold(spec.for_)
    ctx.cluster.start_nodes([leader, preferred])
    return {"partition": partition, "preferred": preferred, "leader": leader, "lagging": lagging,
            "isr_at_kill": isr, "joined_after_s": round(joined - elected, 2)}
