"""Fault operations. Each breaks something, holds it for the op's duration, then heals what it broke."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from contracts.scenario import FaultSpec
from faults.ports import ClusterControl, ConsumerControl
from faults.targets import pick

Op = Callable[["Ctx", FaultSpec, list[int]], dict]


@dataclass
class Ctx:
    """What a fault needs: the cluster, the topic, the seeded rng, a stop-aware sleep, and the live consumer
    processes (a consumer crash is a fault of the application, not of Kafka)."""

    cluster: ClusterControl
    topic: str
    rng: random.Random
    stop: threading.Event
    consumers: list[ConsumerControl] = field(default_factory=list)

    def hold(self, seconds: float) -> None:
        """Sleep for the fault's duration, waking early if the run is ending."""
        self.stop.wait(seconds)


def isolate_grudge(cluster: ClusterControl, targets: list[int]) -> dict[int, set[int]]:
    """Targets drop everyone else (and ZooKeeper), everyone else drops the targets."""
    everyone = set(cluster.node_ids()) | set(cluster.zookeeper_ids())
    grudge: dict[int, set[int]] = {}
    for t in targets:
        grudge[t] = everyone - set(targets)
    for other in set(cluster.node_ids()) - set(targets):
        grudge[other] = set(targets)
    return grudge


def process(action: str) -> Op:
    """Kill, terminate or pause the targets for the op's hold, then start (or resume) them."""
    def run(ctx: Ctx, spec: FaultSpec, targets: list[int]) -> dict:
        for t in targets:
            getattr(ctx.cluster.node(t), action)()
        ctx.hold(spec.for_)
        if action == "pause":
            for t in targets:
                ctx.cluster.node(t).resume()
        else:
            ctx.cluster.start_nodes(targets)
        return {"action": action}
    return run


def restart(ctx: Ctx, spec: FaultSpec, targets: list[int]) -> dict:
    """A clean shutdown and start of each target in turn."""
    for t in targets:
        ctx.cluster.node(t).terminate()
        ctx.cluster.start_node(t)
    return {"action": "terminate+start"}


def grudge_fault(make: Callable[[Ctx, list[int]], dict[int, set[int]]]) -> Op:
    """Apply the grudge `make` draws for the targets for the op's hold, then lift it."""
    def run(ctx: Ctx, spec: FaultSpec, targets: list[int]) -> dict:
        grudge = make(ctx, targets)
        ctx.cluster.firewall.partition(grudge)
        ctx.hold(spec.for_)
        ctx.cluster.firewall.partition({})
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
    bridge = targets[0]
    rest = [n for n in nodes if n != bridge]
    left, right = set(rest[: len(rest) // 2]), set(rest[len(rest) // 2:])
    return {n: (right if n in left else left) for n in rest}


def one_way(ctx: Ctx, targets: list[int]) -> dict[int, set[int]]:
    """The targets drop everyone else; everyone else still hears them."""
    others = set(ctx.cluster.node_ids()) - set(targets)
    return {t: others for t in targets}


def link_fault(fragment: Callable[[Ctx, FaultSpec, int], str]) -> Op:
    """Add the link rule `fragment` gives each target for the op's hold, then heal."""
    def run(ctx: Ctx, spec: FaultSpec, targets: list[int]) -> dict:
        rules = {}
        for t in targets:
            rules[t] = fragment(ctx, spec, t)
            ctx.cluster.firewall.link_fault(t, rules[t])
        ctx.hold(spec.for_)
        ctx.cluster.heal()
        return {"rules": {str(k): v for k, v in rules.items()}}
    return run


def rolling(action: str) -> Op:
    """kafkatest's clean_bounce / hard_bounce: each broker in turn, waiting for a full ISR in between."""
    def run(ctx: Ctx, spec: FaultSpec, targets: list[int]) -> dict:
        for t in sorted(targets or ctx.cluster.node_ids()):
            if ctx.stop.is_set():
                break
            getattr(ctx.cluster.node(t), action)()
            ctx.cluster.start_node(t)
            ctx.cluster.metadata.wait_full_isr(ctx.topic, timeout_s=90)
        return {"action": action}
    return run


def _leader_meta(ctx: Ctx, partition: int):
    return ctx.cluster.metadata.partitions(ctx.topic)[partition]


def last_replica_standing(ctx: Ctx, spec: FaultSpec, targets: list[int]) -> dict:
    """Cut the followers off until the ISR is the leader alone, then kill the leader; restore after `for`."""
    partition = ctx.rng.randrange(len(ctx.cluster.metadata.partitions(ctx.topic)))
    meta = _leader_meta(ctx, partition)
    leader, followers = meta.leader, [r for r in meta.replicas if r != meta.leader]
    ctx.cluster.firewall.partition(isolate_grudge(ctx.cluster, followers))
    ctx.cluster.metadata.wait_for(f"ISR of partition {partition} shrinking to [{leader}]",
                         lambda: ctx.cluster.metadata.isr(ctx.topic, partition) == [leader], timeout_s=60)
    ctx.cluster.node(leader).kill()
    ctx.cluster.firewall.partition({})
    ctx.hold(spec.for_)
    ctx.cluster.start_node(leader)
    return {"partition": partition, "leader": leader, "followers": followers}


def unclean_sequence(ctx: Ctx, spec: FaultSpec, targets: list[int]) -> dict:
    """A follower falls out of the ISR, the ISR is killed, the lagging follower comes back first."""
    partition = ctx.rng.randrange(len(ctx.cluster.metadata.partitions(ctx.topic)))
    meta = _leader_meta(ctx, partition)
    lagging = ctx.rng.choice([r for r in meta.replicas if r != meta.leader])
    ctx.cluster.firewall.partition(isolate_grudge(ctx.cluster, [lagging]))
    ctx.cluster.metadata.wait_for(f"replica {lagging} leaving the ISR of partition {partition}",
                         lambda: lagging not in ctx.cluster.metadata.isr(ctx.topic, partition), timeout_s=60)
    ctx.hold(spec.for_)  # writes continue without the lagging replica
    in_sync = [r for r in meta.replicas if r != lagging]
    for r in in_sync:
        ctx.cluster.node(r).kill()
    ctx.cluster.firewall.partition({})
    ctx.hold(spec.for_)  # only the lagging replica is alive: unclean election happens here, or nothing does
    ctx.cluster.start_nodes(in_sync)
    return {"partition": partition, "lagging": lagging, "killed": in_sync}


def consumer_kill(ctx: Ctx, spec: FaultSpec, targets: list[int]) -> dict:
    """SIGKILL live consumer processes (the group rebalances after session.timeout.ms); restart after `for`."""
    victims = pick(spec.target, list(range(len(ctx.consumers))), ctx.rng)
    try:
        for i in victims:
            ctx.consumers[i].kill()
        ctx.hold(spec.for_)
    finally:
        for i in victims:
            ctx.consumers[i].start()
    return {"consumers": victims}
