"""Resolve a fault's target (data in the scenario) to node ids, from live metadata at the moment it fires."""

from __future__ import annotations

import random
from typing import Any

from contracts.scenario import COUNTED
from faults.ports import ClusterControl


def pick(target: Any, members: list[int], rng: random.Random) -> list[int]:
    """`one`, `all`, `minority`, `majority`, an id or a list of ids, among `members` (brokers or consumers)."""
    if isinstance(target, int):
        return [target]
    if isinstance(target, list):
        return list(target)
    if target == "one":
        return [rng.choice(members)]
    if target == "all":
        return list(members)
    if target in ("minority", "majority"):
        size = (len(members) - 1) // 2 if target == "minority" else len(members) // 2 + 1
        return sorted(rng.sample(members, max(size, 1)))
    raise ValueError(f"target {target!r} does not name members by count or id")


def resolve(target: Any, cluster: ClusterControl, topic: str, rng: random.Random) -> tuple[list[int], int]:
    """(node ids, the partition consulted) for `one`, `minority`, `majority`, `all`, `leader`, `followers`,
    `controller`, `isr`, `non-isr`, a node id or a list of them. Empty when nothing matches (e.g. no leader)."""
    nodes = cluster.node_ids()
    partition = rng.randrange(cluster_partitions(cluster, topic))
    if isinstance(target, int | list) or target in COUNTED:
        return pick(target, nodes, rng), partition
    if target == "controller":
        c = cluster.metadata.controller()
        return ([c] if c >= 0 else []), partition
    meta = cluster.metadata.partitions(topic)[partition]
    if target == "leader":
        return ([meta.leader] if meta.leader >= 0 else []), partition
    if target == "followers":
        return [r for r in meta.replicas if r != meta.leader], partition
    if target == "isr":
        return sorted(meta.isrs), partition
    if target == "non-isr":
        return [r for r in meta.replicas if r not in meta.isrs], partition
    raise ValueError(f"unknown target {target!r}")


def cluster_partitions(cluster: ClusterControl, topic: str) -> int:
    """How many partitions the topic has (1 if the cluster cannot say right now)."""
    try:
        return max(1, len(cluster.metadata.partitions(topic)))
    except Exception:  # noqa: BLE001 - a fault must still fire on a struggling cluster
        return 1
