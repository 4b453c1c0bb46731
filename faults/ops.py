"""Fault operations. Each breaks something, checks that it broke (raising NoEffect when it did not),
holds it for the op's duration, then heals what it broke. An op returns what it did, for the op's
`faults` row."""

from __future__ import annotations

import contextlib
import random
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Literal

from contracts.errors import ClusterError, first_line
from contracts.scenario import FaultSpec
from faults.ports import Aimed, Clients, ClusterControl
from faults.targets import pick
from harness import netrules
from harness.broker_config import INTERNAL_PORT

Op = Callable[["Ctx", FaultSpec, list[int]], dict]
STATE_AFTER = {"kill": "exited", "terminate": "exited", "pause": "paused"}


class NoEffect(Exception):
    """An op ran without error but what it should have broken was not broken (a node already down,
    say)."""


class Stalled(NoEffect):
    """The cluster never reached a state the op waits for (a migration's metadata copy, say): a
    liveness finding as well as no effect."""


@dataclass
class Ctx:
    """What a fault needs: the cluster, the topic, the seeded rng, a stop-aware sleep, the
    workload's clients, and the owner name its network rules go by."""

    cluster: ClusterControl
    topic: str
    rng: random.Random
    stop: threading.Event
    clients: Clients = field(default_factory=Clients)
    owner: str = ""
    # the nemesis's claim of brokers for the line (returns those another line holds), and release
    claim: Callable[[list[int]], list[int]] = lambda brokers: []
    release: Callable[[], None] = lambda: None

    def hold(self, seconds: float) -> None:
        """Sleep for the fault's duration, waking early if the run is ending."""
        self.stop.wait(seconds)

    @contextlib.contextmanager
    def holding(self, broker: int, every_s: float = 0.5) -> Iterator[bool]:
        """Hold one broker from other lines' ops, once the op that holds it now lets go; yields
        False once the run ended (a roll's next step would run with no workload)."""
        if self.stop.is_set():
            yield False
            return
        while self.claim([broker]):
            if self.stop.wait(every_s):
                yield False
                return
        try:
            yield True
        finally:
            self.release()

    def expect_state(self, node_id: int, state: str, what: str) -> None:
        """Raise NoEffect unless broker `node_id` is in `state` (Docker's status)."""
        actual = self.cluster.node(node_id).state()
        if actual != state:
            raise NoEffect(f"{what}: broker {node_id} is {actual}, not {state}")


def isolate_grudge(cluster: ClusterControl, targets: list[int]) -> dict[int, set[int]]:
    """Targets drop everyone else (and ZooKeeper), everyone else drops the targets."""
    everyone = set(cluster.node_ids()) | set(cluster.zookeeper_ids())
    grudge: dict[int, set[int]] = {}
    for t in targets:
        grudge[t] = everyone - set(targets)
    for other in set(cluster.node_ids()) - set(targets):
        grudge[other] = set(targets)
    return grudge


def break_node(ctx: Ctx, action: str, node_id: int) -> None:
    """Kill, terminate or pause a running broker and check it is down (or frozen)."""
    ctx.expect_state(node_id, "running", f"{action} found it not running")
    getattr(ctx.cluster.node(node_id), action)()
    ctx.expect_state(node_id, STATE_AFTER[action], f"{action} did not take")


def process(action: str) -> Op:
    """Kill, terminate or pause the targets for the op's hold, then start (or resume) them."""
    def run(ctx: Ctx, spec: FaultSpec, targets: list[int]) -> dict:
        try:
            for t in targets:
                break_node(ctx, action, t)
            ctx.hold(spec.for_)
        finally:
            if action == "pause":
                for t in targets:
                    ctx.cluster.node(t).resume()
            else:
                ctx.cluster.start_nodes([t for t in targets if t in ctx.cluster.stopped()])
        return {"action": action}
    return run


def power_loss(ctx: Ctx, spec: FaultSpec, targets: list[int]) -> dict:
    """Cut the targets' power together: each loses every write it had not fsynced; start them again
    after the hold."""
    for t in targets:
        ctx.expect_state(t, "running", "power-loss found it not running")
    try:
        cut = ctx.cluster.power_off(targets, spec.torn)
        for t in targets:
            ctx.expect_state(t, "exited", "power-loss did not take")
        ctx.hold(spec.for_)
    finally:
        ctx.cluster.start_nodes([t for t in targets if t in ctx.cluster.stopped()])
    return {"action": "power-loss", "stopped_within_ms": round(cut.spread_s * 1000, 1),
            "lost": {str(t): {"files": loss.files, "bytes": loss.bytes, "torn": loss.torn}
                     for t, loss in cut.losses.items()}}


def disk_fault(command: Callable[[FaultSpec], str]) -> Op:
    """Make the targets' disks full or slow (a lazyfs command) for the op's hold, then heal them and
    start any broker that stopped (a log directory that fails halts a broker that has no other)."""
    def run(ctx: Ctx, spec: FaultSpec, targets: list[int]) -> dict:
        for t in targets:
            ctx.expect_state(t, "running", f"{spec.fault} found it not running")
        healed: dict[str, dict] = {}
        unhealed: list[str] = []
        try:
            for t in targets:
                ctx.cluster.node(t).lazyfs(command(spec))
            ctx.hold(spec.for_)
        finally:
            for t in set(targets) - set(ctx.cluster.stopped()):
                try:
                    healed[str(t)] = ctx.cluster.node(t).lazyfs("heal")["faults"]
                except ClusterError as exc:
                    # a broker that stopped since took its lazyfs, and the fault, with it
                    if t not in ctx.cluster.stopped():
                        unhealed.append(first_line(exc))
            exited = [t for t in targets if t in ctx.cluster.stopped()]
            ctx.cluster.start_nodes(exited)
        if unhealed:  # what the fault did is unknown, and it may still be on
            raise ClusterError(f"{spec.fault}: the heal failed: {'; '.join(unhealed)}")
        if not exited and not any(f["refused"] or f["slowed"] for f in healed.values()):
            raise NoEffect(f"{spec.fault}: no write or fsync reached the disks of brokers "
                           f"{targets}")
        return {"action": command(spec), "exited": exited, "disk": healed}
    return run


def restart(ctx: Ctx, spec: FaultSpec, targets: list[int]) -> dict:
    """A clean shutdown and start of each target in turn."""
    for t in targets:
        break_node(ctx, "terminate", t)
        ctx.cluster.start_node(t)
    return {"action": "terminate+start"}


def expect_rules(ctx: Ctx, node_ids: list[int], what: str) -> None:
    """Raise NoEffect unless some running broker among `node_ids` holds fault rules (iptables or
    tc)."""
    stopped = ctx.cluster.stopped()
    rules = [ctx.cluster.firewall.rules(n) for n in node_ids if n not in stopped]
    if not any("-A KCHAOS" in r or " tbf " in r for r in rules):
        raise NoEffect(f"{what}: no rule in force on brokers {sorted(node_ids)}")


def grudge_fault(make: Callable[[Ctx, list[int]], dict[int, set[int]]]) -> Op:
    """Apply the grudge `make` draws for the targets for the op's hold, then lift it."""
    def run(ctx: Ctx, spec: FaultSpec, targets: list[int]) -> dict:
        grudge = make(ctx, targets)
        try:
            ctx.cluster.firewall.partition(grudge, ctx.owner)
            expect_rules(ctx, sorted(grudge), "the partition")
            ctx.hold(spec.for_)
        finally:
            ctx.cluster.firewall.lift(ctx.owner)
        return {"grudge": {str(k): sorted(v) for k, v in grudge.items()}}
    return run


def split(ctx: Ctx, targets: list[int]) -> dict[int, set[int]]:
    """The targets' side (or its complement, whichever is smaller) and the rest drop each other."""
    nodes = ctx.cluster.node_ids()
    minority = set(targets) if len(targets) <= len(nodes) // 2 else set(nodes) - set(targets)
    majority = set(nodes) - minority
    return {n: (majority if n in minority else minority) for n in nodes}


def bridge(ctx: Ctx, targets: list[int]) -> dict[int, set[int]]:
    """The first target talks to both halves; the halves do not talk to each other."""
    nodes = ctx.cluster.node_ids()
    middle = targets[0]
    rest = [n for n in nodes if n != middle]
    left, right = set(rest[: len(rest) // 2]), set(rest[len(rest) // 2:])
    return {n: (right if n in left else left) for n in rest}


def one_way(ctx: Ctx, targets: list[int]) -> dict[int, set[int]]:
    """The targets drop everyone else; everyone else still hears them."""
    others = set(ctx.cluster.node_ids()) - set(targets)
    return {t: others for t in targets}


def link_fault(fragment: Callable[[Ctx, FaultSpec, int], str]) -> Op:
    """Add the link rule `fragment` gives each target for the op's hold, then lift it."""
    def run(ctx: Ctx, spec: FaultSpec, targets: list[int]) -> dict:
        rules = {}
        try:
            for t in targets:
                rules[t] = fragment(ctx, spec, t)
                ctx.cluster.firewall.link_fault(t, rules[t], ctx.owner)
            expect_rules(ctx, targets, "the link rule")
            ctx.hold(spec.for_)
        finally:
            ctx.cluster.firewall.lift(ctx.owner)
        return {"rules": {str(k): v for k, v in rules.items()}}
    return run


def _partition_of(ctx: Ctx):
    """A partition of the topic drawn by the op's rng, and its metadata."""
    parts = ctx.cluster.metadata.partitions(ctx.topic)
    partition = ctx.rng.randrange(len(parts))
    return partition, parts[partition]


def _wait_isr_alone(ctx: Ctx, partition: int, leader: int) -> None:
    """Wait until a partition's ISR is its leader alone, as the controller recorded it. In ZooKeeper
    mode that is read from ZooKeeper: a controller among the cut-off followers cannot update the
    leader's metadata, and the brokers' answers may be the leader's."""
    what = f"ISR of partition {partition} shrinking to [{leader}]"
    if not ctx.cluster.zookeeper_ids():
        ctx.cluster.metadata.wait_for(
            what, lambda: ctx.cluster.metadata.isr(ctx.topic, partition) == [leader], timeout_s=60)
        return
    with ctx.cluster.zookeeper_session() as zk:
        ctx.cluster.metadata.wait_for(what,
                                      lambda: zk.partition(ctx.topic, partition).isr == (leader,),
                                      timeout_s=60)


def last_replica_standing(ctx: Ctx, spec: FaultSpec, targets: list[int]) -> dict:
    """Cut the followers off until the ISR is the leader alone, then kill the leader; restore after
    `for`."""
    partition, meta = _partition_of(ctx)
    leader, followers = meta.leader, [r for r in meta.replicas if r != meta.leader]
    try:
        ctx.cluster.firewall.partition(isolate_grudge(ctx.cluster, followers), ctx.owner)
        _wait_isr_alone(ctx, partition, leader)
        break_node(ctx, "kill", leader)
    finally:
        ctx.cluster.firewall.lift(ctx.owner)
    ctx.hold(spec.for_)
    ctx.cluster.start_node(leader)
    return {"partition": partition, "leader": leader, "followers": followers}


def last_replica_power_loss(ctx: Ctx, spec: FaultSpec, targets: list[int]) -> dict:
    """KIP-966's case: a leader drops what its followers send its listener (its own requests to a
    ZooKeeper-era controller among them are still answered; a KRaft controller is not cut off) until
    the ISR of a partition is the leader alone, then loses power; it is started again after the
    hold. The row says who led while it was down: nobody before eligible leader replicas, an
    eligible follower with them."""
    partition, meta = _partition_of(ctx)
    leader, followers = meta.leader, [r for r in meta.replicas if r != meta.leader]
    ctx.expect_state(leader, "running", "last-replica-power-loss found the leader not running")
    cut_off = netrules.drop_from([ctx.cluster.node(f).ip() for f in followers], port=INTERNAL_PORT)
    try:
        ctx.cluster.firewall.link_fault(leader, cut_off, ctx.owner)
        _wait_isr_alone(ctx, partition, leader)
        cut = ctx.cluster.power_off([leader], spec.torn)
    finally:
        ctx.cluster.firewall.lift(ctx.owner)
    ctx.hold(spec.for_)
    led_by = ctx.cluster.metadata.leader(ctx.topic, partition)
    ctx.cluster.start_nodes([leader])
    loss = cut.losses[leader]
    return {"partition": partition, "leader": leader, "followers": followers,
            "leader_while_down": led_by,
            "lost": {"files": loss.files, "bytes": loss.bytes, "torn": loss.torn}}


def unclean_sequence(ctx: Ctx, spec: FaultSpec, targets: list[int]) -> dict:
    """A follower falls out of the ISR, the ISR is killed, the lagging follower comes back first."""
    partition, meta = _partition_of(ctx)
    lagging = ctx.rng.choice([r for r in meta.replicas if r != meta.leader])
    in_sync = [r for r in meta.replicas if r != lagging]
    try:
        ctx.cluster.firewall.partition(isolate_grudge(ctx.cluster, [lagging]), ctx.owner)
        ctx.cluster.metadata.wait_for(f"replica {lagging} leaving the ISR of partition {partition}",
                                      lambda: lagging not in ctx.cluster.metadata.isr(
                                          ctx.topic, partition),
                                      timeout_s=60)
        ctx.hold(spec.for_)  # writes continue without the lagging replica
        for r in in_sync:
            break_node(ctx, "kill", r)
    finally:
        ctx.cluster.firewall.lift(ctx.owner)
    # only the lagging replica is alive: unclean election happens here, or nothing does
    ctx.hold(spec.for_)
    ctx.cluster.start_nodes(in_sync)
    return {"partition": partition, "lagging": lagging, "killed": in_sync}


def off_controller(ctx: Ctx) -> tuple[int, int]:
    """A partition (drawn by the op's rng) with 3 in-sync replicas, none the controller, and its
    leader: killing replicas never moves the controller, and the controller reaches them all."""
    controller = ctx.cluster.metadata.controller()
    parts = ctx.cluster.metadata.partitions(ctx.topic)
    fit = [p for p, m in sorted(parts.items()) if controller not in m.replicas and len(m.isrs) == 3]
    if not fit:
        raise NoEffect(f"no partition of {ctx.topic} with 3 in-sync replicas off the controller "
                       f"({controller})")
    partition = ctx.rng.choice(fit)
    return partition, parts[partition].leader


def hw_truncation(ctx: Ctx, spec: FaultSpec, targets: list[int]) -> dict:
    """KIP-101's truncation to the high watermark, on a partition off the controller: the replica
    the controller elects last stops hearing the other two (its fetches still reach the leader,
    which acknowledges what they report, so its high watermark falls behind); the leader dies, it
    follows the next leader without hearing it (truncating, before 0.11); that leader dies and it is
    elected."""
    meta = ctx.cluster.metadata
    partition, first = off_controller(ctx)
    # the controller's order
    second, cut = [r for r in meta.assignment(ctx.topic, partition) if r != first]

    def leading(node: int) -> None:
        meta.wait_for(f"replica {node} leading partition {partition}",
                      lambda: meta.leader(ctx.topic, partition) == node, timeout_s=60)
    try:
        ctx.cluster.firewall.partition({cut: {first, second}}, ctx.owner)
        # acknowledgements the cut-off follower never hears of (several fetch rounds of the other)
        ctx.hold(3.0)
        break_node(ctx, "kill", first)
        leading(second)
        ctx.hold(spec.for_)  # the cut-off follower follows a leader it cannot reach
        break_node(ctx, "kill", second)
        leading(cut)
    finally:
        ctx.cluster.firewall.lift(ctx.owner)
    ctx.cluster.start_nodes([first, second])
    return {"partition": partition, "killed": [first, second], "elected": cut}


def client_fault(which: Aimed, action: Literal["kill", "pause"]) -> Op:
    """kill: SIGKILL workload client processes (a group rebalances after session.timeout.ms),
    restarted after `for`; pause: SIGSTOP them for `for`, then SIGCONT, as a long GC pause or a
    stopped VM stalls a process (how Jepsen found KAFKA-17754 in transactional producers)."""
    def op(ctx: Ctx, spec: FaultSpec, targets: list[int]) -> dict:
        clients = ctx.clients.of(which)
        victims = pick(spec.target, list(range(len(clients))), ctx.rng)
        try:
            for i in victims:
                if not clients[i].alive:
                    raise NoEffect(f"{which[:-1]} {i} was not running")
                if action == "kill":
                    clients[i].kill()
                    if clients[i].alive:
                        raise NoEffect(f"{which[:-1]} {i} survived SIGKILL")
                else:
                    clients[i].pause()
                    if not clients[i].paused:
                        raise NoEffect(f"{which[:-1]} {i} did not stop on SIGSTOP")
            ctx.hold(spec.for_)
        finally:
            for i in victims:
                if action == "pause":
                    clients[i].resume()
                elif not clients[i].alive:
                    clients[i].start()
        return {which: victims}
    return op
