"""Known bugs' failover sequences, driven and watched through ZooKeeper: KAFKA-7128's stale high
watermark (fixed in 2.0.1), KIP-279's fast double failover (fixed in 2.0) and KIP-101's divergence
after hard failures (fixed in 0.11). docs/DESIGN.md, "Kafka versions and known bugs", says how each
race is widened."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from contracts.scenario import FaultSpec
from faults.ops import Ctx, NoEffect, break_node, off_controller
from faults.ports import ClientControl
from harness.zookeeper import PartitionState, ZooKeeper

JOIN_TIMEOUT_S = 90.0
# a killed leader's ZooKeeper session expires, then the controller elects from the ISR
FAILOVER_TIMEOUT_S = 60.0
ELECTION_WAIT_S = 15.0  # for each preferred-replica election request
ELECTION_REQUESTS = 3
State = Callable[[], PartitionState]


def _await(ctx: Ctx, fault: str, what: str, state: State, test: Callable[[PartitionState], bool],
           timeout_s: float, every_s: float = 0.1) -> float:
    """Poll the partition's state until `test` holds; return when it did (monotonic), or raise
    NoEffect naming `what` and the state read last."""
    deadline, seen = time.monotonic() + timeout_s, None
    while not ctx.stop.is_set() and time.monotonic() < deadline:
        seen = state()
        if test(seen):
            return time.monotonic()
        ctx.stop.wait(every_s)
    if ctx.stop.is_set():
        raise NoEffect(f"{fault}: the run ended before {what}")
    raise NoEffect(f"{fault}: {what} did not happen within {timeout_s:g} s (ZooKeeper had {seen})")


def _elect(ctx: Ctx, fault: str, zk: ZooKeeper, state: State, partition: int, preferred: int,
           what: str) -> tuple[float, int]:
    """Ask the controller for a preferred-replica election, and ask again while it leaves another
    leader; return when the preferred replica leads (monotonic) and how many requests that took."""
    request = 0
    while True:
        request += 1
        zk.elect_preferred(ctx.topic, partition)
        try:
            return _await(ctx, fault, what, state, lambda s: s.leader == preferred,
                          ELECTION_WAIT_S), request
        except NoEffect as exc:
            if request == ELECTION_REQUESTS or ctx.stop.is_set():
                raise NoEffect(f"{exc}; election requests made: {request}") from None


def _lead_from_second(ctx: Ctx, fault: str, state: State, partition: int, preferred: int,
                      second: int) -> None:
    """Move leadership to the second replica with the preferred one back in the ISR (kill and
    restart it)."""
    leader = state().leader
    if leader not in (preferred, second):
        raise NoEffect(f"{fault}: partition {partition} is led by broker {leader}, not by one of "
                       "its first two replicas")
    if leader == preferred:
        break_node(ctx, "kill", preferred)
        _await(ctx, fault, f"broker {second} leading", state, lambda s: s.leader == second,
               FAILOVER_TIMEOUT_S)
        ctx.cluster.start_node(preferred)
    _await(ctx, fault, f"broker {preferred} back in the ISR", state, lambda s: preferred in s.isr,
           60, every_s=0.5)


@dataclass(frozen=True)
class Stage:
    """A partition off the controller led by its second replica, with its preferred one in the ISR,
    and the ZooKeeper session that watches it."""

    zk: ZooKeeper
    state: State
    partition: int
    preferred: int
    second: int
    third: int


@contextlib.contextmanager
def _staged(ctx: Ctx, fault: str) -> Iterator[Stage]:
    """Set the stage both sequences start from; the network rules the op adds are lifted on the way
    out."""
    partition, _ = off_controller(ctx)
    preferred, second, third = ctx.cluster.metadata.assignment(ctx.topic, partition)
    with ctx.cluster.zookeeper_session() as zk:
        state = lambda: zk.partition(ctx.topic, partition)  # noqa: E731
        _lead_from_second(ctx, fault, state, partition, preferred, second)
        try:
            yield Stage(zk, state, partition, preferred, second, third)
        finally:
            ctx.cluster.firewall.lift(ctx.owner)


def stale_hw_isr_join(ctx: Ctx, spec: FaultSpec, targets: list[int]) -> dict:
    """Restart the lagging replica cut off from the leader (out of the ISR, behind); after `for`,
    cut the leader off from the preferred replica and elect the preferred one; when the lagging one
    joins the ISR, kill the old leader, then the new one. Both restart after `for`. The row has the
    ISR at the kill and how long the join took."""
    fault = "stale-hw-isr-join"
    with _staged(ctx, fault) as st:
        preferred, leader, lagging, state = st.preferred, st.second, st.third, st.state
        ctx.cluster.firewall.partition({lagging: {leader}, leader: {lagging}}, ctx.owner)
        break_node(ctx, "kill", lagging)
        ctx.cluster.start_node(lagging)
        if lagging in state().isr:
            raise NoEffect(f"broker {lagging} rejoined the ISR of partition {st.partition} after "
                           "its restart")
        ctx.hold(spec.for_)
        ctx.cluster.firewall.partition({lagging: {leader}, leader: {lagging, preferred},
                                        preferred: {leader}},
                                       ctx.owner)
        elected, asked = _elect(ctx, fault, st.zk, state, st.partition, preferred,
                                f"broker {preferred} elected")
        joined = _await(ctx, fault, f"broker {lagging} joining the ISR", state,
                        lambda s: lagging in s.isr, JOIN_TIMEOUT_S)
        isr = list(state().isr)
        for node in (leader, preferred):
            break_node(ctx, "kill", node)
    ctx.hold(spec.for_)
    ctx.cluster.start_nodes([leader, preferred])
    return {"partition": st.partition, "preferred": preferred, "leader": leader, "lagging": lagging,
            "isr_at_kill": isr, "joined_after_s": round(joined - elected, 2),
            "election_requests": [asked]}


class _Pauses:
    """The producers an op paused and has not resumed: on the way out only these are resumed, never
    one that another fault paused meanwhile."""

    def __init__(self) -> None:
        self.held: list[ClientControl] = []

    def pause(self, *producers: ClientControl) -> None:
        for p in producers:
            p.pause()
            self.held.append(p)

    def resume(self, *producers: ClientControl) -> None:
        for p in producers:
            p.resume()
            self.held.remove(p)


@contextlib.contextmanager
def _producers_paused(ctx: Ctx, fault: str) -> Iterator[tuple[list[ClientControl], _Pauses]]:
    """The workload's producers (at least two, all running and none paused) and the op's pauses of
    them, each undone on the way out."""
    producers = ctx.clients.producers
    if len(producers) < 2 or not all(p.alive and not p.paused for p in producers):
        raise NoEffect(f"{fault}: needs two or more running producers, none paused (producer.count "
                       ">= 2)")
    pauses = _Pauses()
    try:
        yield producers, pauses
    finally:
        pauses.resume(*[p for p in pauses.held if p.paused])


def fast_failover_divergence(ctx: Ctx, spec: FaultSpec, targets: list[int]) -> dict:
    """Elect the preferred replica while it is cut off from the leader it trails, so that for `for`
    it appends writes in an epoch the old leader never sees; kill it, so the old leader (still in
    the ISR) leads again, and restart it after `for`. Once it is back in the ISR it is elected
    again, so reads see what it kept. The last producer is paused while the old leader takes the
    writes the preferred replica lacks, the others while the preferred replica leads: a retried
    batch would otherwise land at the same offset on both and hide the divergence."""
    fault = "fast-failover-divergence"
    with _staged(ctx, fault) as st, _producers_paused(ctx, fault) as (producers, pauses):
        preferred, second, state = st.preferred, st.second, st.state
        *gap_writers, brief_writer = producers
        pauses.pause(brief_writer)
        ctx.hold(1.0)  # the preferred replica fetches what the paused producer had sent
        ctx.cluster.firewall.partition({preferred: {second}, second: {preferred}}, ctx.owner)
        ctx.hold(1.0)  # the leader appends writes its cut-off preferred replica cannot fetch
        pauses.pause(*gap_writers)
        _, asked = _elect(ctx, fault, st.zk, state, st.partition, preferred,
                          f"broker {preferred} elected")
        pauses.resume(brief_writer)
        ctx.hold(spec.for_)
        brief = state()
        if second not in brief.isr:
            raise NoEffect(f"{fault}: broker {second} left the ISR of partition {st.partition} "
                           "while cut off")
        break_node(ctx, "kill", preferred)
        _await(ctx, fault, f"broker {second} elected again", state, lambda s: s.leader == second,
               FAILOVER_TIMEOUT_S)
        ctx.cluster.firewall.lift(ctx.owner)
        pauses.resume(*gap_writers)
        # the old leader appends in its new epoch before the preferred replica returns
        ctx.hold(spec.for_)
        ctx.cluster.start_node(preferred)
        _await(ctx, fault, f"broker {preferred} back in the ISR", state,
               lambda s: preferred in s.isr, JOIN_TIMEOUT_S, every_s=0.5)
        _, asked_again = _elect(ctx, fault, st.zk, state, st.partition, preferred,
                                f"broker {preferred} leading again")
    return {"partition": st.partition, "preferred": preferred, "leader": second,
            "brief_epoch": brief.leader_epoch, "isr_at_kill": list(brief.isr),
            "election_requests": [asked, asked_again]}


def power_loss_divergence(ctx: Ctx, spec: FaultSpec, targets: list[int]) -> dict:
    """KIP-101's second scenario on a partition off the controller: its leader and one follower
    crash, the other follower leads alone and loses power; it returns first and leads for `for` with
    what it had fsynced, then the crashed two return and follow it. The producers are paused from
    the crash until it leads again, so its log ends where it last fsynced (a segment roll) and the
    crashed replicas' high watermarks lie beyond that."""
    fault = "power-loss-divergence"
    partition, leader = off_controller(ctx)
    replicas = ctx.cluster.metadata.assignment(ctx.topic, partition)
    survivor = ctx.rng.choice([r for r in replicas if r != leader])
    crashed = [r for r in replicas if r != survivor]
    with ctx.cluster.zookeeper_session() as zk, _producers_paused(ctx, fault) as (
            producers, pauses):
        state = lambda: zk.partition(ctx.topic, partition)  # noqa: E731
        try:
            pauses.pause(*producers)
            for node in crashed:
                break_node(ctx, "kill", node)
            _await(ctx, fault, f"broker {survivor} leading alone", state,
                   lambda s: s.isr == (survivor,), 60)
            ctx.expect_state(survivor, "running", f"{fault} found the survivor not running")
            cut = ctx.cluster.power_off([survivor])
            ctx.cluster.start_nodes([survivor])
            _await(ctx, fault, f"broker {survivor} leading again", state,
                   lambda s: s.leader == survivor, 90, 0.5)
            epoch = state().leader_epoch
            pauses.resume(*producers)
            ctx.hold(spec.for_)  # it appends where the crashed replicas hold other records
        finally:
            ctx.cluster.start_nodes([r for r in [survivor, *crashed] if r in ctx.cluster.stopped()])
    loss = cut.losses[survivor]
    return {"partition": partition, "survivor": survivor, "crashed": crashed,
            "survivor_epoch": epoch, "lost": {"files": loss.files, "bytes": loss.bytes}}
