"""Broker disk faults: healed after the hold; no effect only when the heal answered that nothing
reached the disk, never when the heal itself failed."""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass, field

import pytest

from contracts.errors import ClusterError
from contracts.faultlines import FaultSpec
from faults.ops import Ctx, NoEffect
from faults.registry import OPS


@dataclass
class Node:
    slowed: int
    heal_fails: bool = False
    said: list[str] = field(default_factory=list)

    def state(self) -> str:
        return "running"

    def lazyfs(self, command: str) -> dict:
        self.said.append(command)
        if command == "heal" and self.heal_fails:
            raise ClusterError("lazyfs on kafka-2 did not answer 'heal' (exit 1): no socket\nmore")
        return {"faults": {"refused": 0, "slowed": self.slowed}} if command == "heal" else {}


@dataclass
class Cluster:
    nodes: dict[int, Node]

    def node(self, node_id: int) -> Node:
        return self.nodes[node_id]

    def stopped(self) -> list[int]:
        return []

    def start_nodes(self, ids: list[int]) -> None:
        assert not ids


def slow(node: Node) -> dict:
    stop = threading.Event()
    stop.set()  # the hold returns at once
    c = Ctx(Cluster({2: node}), "chaos", random.Random(0), stop)  # type: ignore[arg-type]
    return OPS["disk-slow"](c, FaultSpec(fault="disk-slow", latency_ms=200), [2])


def test_a_slow_disk_says_what_it_slowed():
    node = Node(slowed=205)
    assert slow(node) == {"action": "slow 200", "exited": [],
                          "disk": {"2": {"refused": 0, "slowed": 205}}}
    assert node.said == ["slow 200", "heal"]


def test_a_slow_disk_no_write_reached_had_no_effect():
    with pytest.raises(NoEffect, match=r"no write or fsync reached the disks of brokers \[2\]"):
        slow(Node(slowed=0))


def test_a_heal_that_failed_on_a_running_broker_is_a_failure_not_no_effect():
    with pytest.raises(ClusterError, match="disk-slow: the heal failed: lazyfs on kafka-2 did not "
                                           r"answer 'heal' \(exit 1\): no socket$"):
        slow(Node(slowed=0, heal_fails=True))
