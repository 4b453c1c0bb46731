"""The cluster's network rules: which node drops whom (a grudge) and each node's link faults (the
brokers', and a migration's controllers')."""

from __future__ import annotations

import threading
from collections.abc import Callable

from contracts.errors import ClusterError
from harness import netrules
from harness.node import KafkaNode


class Firewall:
    """Grudges and link rules, each held by an owner (a fault line), so that lines running at once
    lift only their own; a node's rules are the union of every owner's, applied inside its container
    (healing is one flush)."""

    def __init__(self, nodes: Callable[[], list[KafkaNode]],
                 zookeeper: Callable[[], KafkaNode | None]) -> None:
        self._nodes, self._zookeeper = nodes, zookeeper
        self._grudges: dict[str, dict[int, set[int]]] = {}
        self._links: dict[str, dict[int, list[str]]] = {}
        self._lock = threading.RLock()

    def _node(self, node_id: int) -> KafkaNode:
        return next(n for n in self._nodes() if n.node_id == node_id)

    @property
    def grudge(self) -> dict[int, set[int]]:
        """Every owner's grudges together: each node and the peers it drops."""
        with self._lock:
            merged: dict[int, set[int]] = {}
            for grudge in self._grudges.values():
                for node, peers in grudge.items():
                    merged.setdefault(node, set()).update(peers)
            return merged

    def link_rules(self, node_id: int) -> list[str]:
        """Every owner's link rules on one node."""
        with self._lock:
            return [rule for links in self._links.values() for rule in links.get(node_id, [])]

    def partition(self, grudge: dict[int, set[int]], owner: str = "") -> None:
        """Set `owner`'s grudge (an empty one lifts it): each node drops every packet from the peers
        it names."""
        with self._lock:
            self._grudges[owner] = {k: set(v) for k, v in grudge.items() if v}
            for node in self._nodes():
                self.apply(node)

    def link_fault(self, node_id: int, fragment: str, owner: str = "") -> None:
        """Add a client-side or link rule (port block, TCP reset, packet loss, bandwidth) to one
        node."""
        with self._lock:
            self._links.setdefault(owner, {}).setdefault(node_id, []).append(fragment)
            self.apply(self._node(node_id))

    def lift(self, owner: str) -> None:
        """Remove one owner's grudge and link rules from every node."""
        with self._lock:
            touched = set(self._grudges.pop(owner, {})) | set(self._links.pop(owner, {}))
            if touched:
                for node in self._nodes():
                    self.apply(node)

    def clear(self) -> None:
        """Forget every grudge and link rule (the next `apply` of each node removes them)."""
        with self._lock:
            self._grudges.clear()
            self._links.clear()

    def apply(self, node: KafkaNode) -> None:
        """Make a running node's rules what the state says (nothing to do for a stopped or paused
        node)."""
        with self._lock:
            if node.state() != "running":
                return
            drops = self.grudge.get(node.node_id, set())
            peers = [self._node(p).ip() for p in sorted(drops - {0})]
            zookeeper = self._zookeeper()
            if zookeeper and zookeeper.node_id in drops:
                peers.append(zookeeper.ip())
            script = netrules.script(netrules.FLUSH, netrules.drop_from(peers) if peers else "",
                                     *self.link_rules(node.node_id))
            done = node.sh_if_running(script)
        if done is None:
            return
        code, out = done
        if code != 0:
            raise ClusterError(f"network rules on {node.alias} failed (exit {code}): "
                               f"{out.strip()[-300:]}")

    def rules(self, node_id: int) -> str:
        """The iptables and tc state inside a node (for tests and reports)."""
        return self._node(node_id).sh(f"iptables -S {netrules.CHAIN} 2>&1; iptables -S "
                                      f"{netrules.CHAIN_OUT} 2>&1; tc qdisc show dev "
                                      "eth0")[1]

    def isolated(self) -> set[int]:
        """Brokers that currently drop or are dropped by a peer, or refuse clients."""
        with self._lock:
            grudge = self.grudge
            cut = set(grudge) | {n for links in self._links.values() for n,
                                 rules in links.items() if rules}
        for peers in grudge.values():
            cut |= peers
        return cut
