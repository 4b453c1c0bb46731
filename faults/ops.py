"""Fault operations. Each breaks something, holds it for the op's duration, then heals what it broke."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from faults.targets import pick
from harness import netrules
from harness.scenario import FaultSpec


@dataclass
class Ctx:
    """What a fault needs: the cluster, the topic, the seeded rng, a stop-aware sleep, and the live consumer
    processes (a consumer crash is a fault of the application, not of Kafka)."""

    cluster: object
    topic: str
    rng: random.Random
    stop: threading.Event
    consumers: list = field(default_factory=list)

    def hold(self, seconds: float) -> None:
        """Sleep for the fault's duration, waking early if the run is ending."""
        self.stop.wait(seconds)


def _isolate_grudge(cluster, targets: list[int]) -> dict[int, set[int]]:
    """Targets drop everyone else (and ZooKeeper), everyone else drops the targets."""
    everyone = set(cluster.node_ids()) | ({0} if cluster.zookeeper else set())
    grudge: dict[int, set[int]] = {}
    for t in targets:
        grudge[t] = everyone - set(targets)
    for other in set(cluster.node_ids()) - set(targets):
        grudge[other] = set(targets)
    return grudge


def process(action: str) -> Callable:
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
    for t in targets:
        ctx.cluster.node(t).terminate()
        ctx.cluster.start_node(t)
    return {"action": "terminate+start"}


def grudge_fault(make: Callable) -> Callable:
    def run(ctx: Ctx, spec: FaultSpec, targets: list[int]) -> dict:
        grudge = make(ctx, targets)
        ctx.cluster.partition(grudge)
        ctx.hold(spec.for_)
        ctx.cluster.partition({})
        return {"grudge": {str(k): sorted(v) for k, v in grudge.items()}}
    return run


def _split(ctx: Ctx, targets: list[int]) -> dict[int, set[int]]:
    nodes = ctx.cluster.node_ids()
    minority = set(targets) if len(targets) <= len(nodes) // 2 else set(nodes) - set(targets)
    majority = set(nodes) - minority
    return {n: (majority if n in minority else minority) for n in nodes}


def _bridge(ctx: Ctx, targets: list[int]) -> dict[int, set[int]]:
    """The first target talks to both halves; the halves do not talk to each other."""
    nodes = ctx.cluster.node_ids()
    bridge = targets[0]
    rest = [n for n in nodes if n != bridge]
    left, right = set(rest[: len(rest) // 2]), set(rest[len(rest) // 2:])
    return {n: (right if n in left else left) for n in rest}


def _one_way(ctx: Ctx, targets: list[int]) -> dict[int, set[int]]:
    others = set(ctx.cluster.node_ids()) - set(targets)
    return {t: others for t in targets}


def link_fault(fragment: Callable[[Ctx, FaultSpec, int], str]) -> Callable:
    def run(ctx: Ctx, spec: FaultSpec, targets: list[int]) -> dict:
        rules = {}
        for t in targets:
            rules[t] = fragment(ctx, spec, t)
            ctx.cluster.link_fault(t, rules[t])
        ctx.hold(spec.for_)
        ctx.cluster.heal()
        return {"rules": {str(k): v for k, v in rules.items()}}
    return run


def rolling(action: str) -> Callable:
    """kafkatest's clean_bounce / hard_bounce: each broker in turn, waiting for a full ISR in between."""
    def run(ctx: Ctx, spec: FaultSpec, targets: list[int]) -> dict:
        for t in sorted(targets or ctx.cluster.node_ids()):
            if ctx.stop.is_set():
                break
            getattr(ctx.cluster.node(t), action)()
            ctx.cluster.start_node(t)
            ctx.cluster.wait_full_isr(ctx.topic, timeout_s=90)
        return {"action": action}
    return run


def _leader_meta(ctx: Ctx, partition: int):
    return ctx.cluster.partition_metadata(ctx.topic)[partition]


def last_replica_standing(ctx: Ctx, spec: FaultSpec, targets: list[int]) -> dict:
    """Cut the followers off until the ISR is the leader alone, then kill the leader; restore after `for`."""
    partition = ctx.rng.randrange(len(ctx.cluster.partition_metadata(ctx.topic)))
    meta = _leader_meta(ctx, partition)
    leader, followers = meta.leader, [r for r in meta.replicas if r != meta.leader]
    ctx.cluster.partition(_isolate_grudge(ctx.cluster, followers))
    ctx.cluster.wait_for(f"ISR of partition {partition} shrinking to [{leader}]",
                         lambda: ctx.cluster.isr(ctx.topic, partition) == [leader], timeout_s=60)
    ctx.cluster.node(leader).kill()
    ctx.cluster.partition({})
    ctx.hold(spec.for_)
    ctx.cluster.start_node(leader)
    return {"partition": partition, "leader": leader, "followers": followers}


def unclean_sequence(ctx: Ctx, spec: FaultSpec, targets: list[int]) -> dict:
    """A follower falls out of the ISR, the ISR is killed, the lagging follower comes back first."""
    partition = ctx.rng.randrange(len(ctx.cluster.partition_metadata(ctx.topic)))
    meta = _leader_meta(ctx, partition)
    lagging = ctx.rng.choice([r for r in meta.replicas if r != meta.leader])
    ctx.cluster.partition(_isolate_grudge(ctx.cluster, [lagging]))
    ctx.cluster.wait_for(f"replica {lagging} leaving the ISR of partition {partition}",
                         lambda: lagging not in ctx.cluster.isr(ctx.topic, partition), timeout_s=60)
    ctx.hold(spec.for_)  # writes continue without the lagging replica
    in_sync = [r for r in meta.replicas if r != lagging]
    for r in in_sync:
        ctx.cluster.node(r).kill()
    ctx.cluster.partition({})
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


REGISTRY: dict[str, Callable[[Ctx, FaultSpec, list[int]], dict]] = {
    "kill": process("kill"),
    "terminate": process("terminate"),
    "pause": process("pause"),
    "restart": restart,
    "isolate": grudge_fault(lambda ctx, t: _isolate_grudge(ctx.cluster, t)),
    "zombie": grudge_fault(lambda ctx, t: _isolate_grudge(ctx.cluster, t)),
    "isolate-controller": grudge_fault(lambda ctx, t: _isolate_grudge(ctx.cluster, t)),
    "split": grudge_fault(_split),
    "bridge": grudge_fault(_bridge),
    "one-way": grudge_fault(_one_way),
    "packet-loss": link_fault(lambda ctx, s, t: netrules.lose(s.probability)),
    "bandwidth": link_fault(lambda ctx, s, t: netrules.cap_bandwidth(s.kbit)),
    "tcp-reset": link_fault(lambda ctx, s, t: netrules.block_port(ctx.cluster.node(t).external_port, reset=True)),
    "block-clients": link_fault(lambda ctx, s, t: netrules.block_port(ctx.cluster.node(t).external_port)),
    "rolling-restart": rolling("terminate"),
    "hard-rolling-restart": rolling("kill"),
    "last-replica-standing": last_replica_standing,
    "unclean-sequence": unclean_sequence,
    "consumer-kill": consumer_kill,
}


def needs_targets(fault: str) -> bool:
    """Composite sequences pick their own victims from metadata; consumer-kill picks consumers."""
    return fault not in ("last-replica-standing", "unclean-sequence", "rolling-restart", "hard-rolling-restart",
                         "consumer-kill")

