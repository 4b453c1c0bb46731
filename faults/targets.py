"""Resolve a fault's target (data in the scenario) to node ids, from live metadata at the moment it
fires."""

from __future__ import annotations

import random
from typing import Any

from contracts.errors import ClusterError
from contracts.faultlines import COUNTED
from contracts.scenario import transactional_id
from faults.ports import ClusterControl


def pick(target: Any, members: list[int], rng: random.Random) -> list[int]:
    """`one`, `all`, `minority`, `majority`, an id or a list of ids, among `members` (brokers or
    consumers)."""
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


def java_hash(text: str) -> int:
    """Java's String.hashCode (over UTF-16 code units), as a signed 32-bit int."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i:i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def coordinator(cluster: ClusterControl, internal_topic: str, key: str) -> tuple[list[int], int]:
    """The leader of the internal partition that owns `key` (Kafka: Utils.abs(key.hashCode) %
    partitions), and that partition; empty before the internal topic exists (its first transaction
    or group creates it)."""
    try:
        parts = cluster.metadata.partitions(internal_topic)
    except ClusterError:
        parts = {}
    if not parts:
        return [], -1
    h = java_hash(key)
    p = (0 if h == -(1 << 31) else abs(h)) % len(parts)
    return ([parts[p].leader] if parts[p].leader >= 0 else []), p


def resolve(target: Any, cluster: ClusterControl, topic: str, rng: random.Random, group: str = "",
            txn_id: str = "") -> tuple[list[int], int]:
    """(node ids, the partition consulted) for `one`, `minority`, `majority`, `all`, `leader`,
    `followers`, `controller`, `isr`, `non-isr`, `zookeeper`, `txn-coordinator` (of `txn_id`, by
    default producer 0's), `group-coordinator` (of `group`), `share-coordinator` (of the share group
    `group`'s state of a partition drawn from `topic`), a node id or a list of them. Empty when
    nothing matches (e.g. no leader)."""
    if target == "txn-coordinator":
        return coordinator(cluster, "__transaction_state", txn_id or transactional_id(0))
    if target == "group-coordinator":
        return coordinator(cluster, "__consumer_offsets", group)
    if target == "zookeeper":
        return cluster.zookeeper_ids(), -1
    partition = rng.randrange(cluster_partitions(cluster, topic))
    if target == "share-coordinator":
        # Kafka's SharePartitionKey: "group:topicId:partition" hashed over __share_group_state
        key = f"{group}:{cluster.metadata.topic_id(topic)}:{partition}"
        return coordinator(cluster, "__share_group_state", key)[0], partition
    nodes = cluster.node_ids()
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
