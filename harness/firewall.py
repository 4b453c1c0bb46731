"""The cluster's network rules: which broker drops whom (a grudge) and each broker's link faults."""

from __future__ import annotations

from collections.abc import Callable

from contracts.errors import ClusterError
from harness import netrules
from harness.node import KafkaNode


class Firewall:
    """Grudge and link-rule state, applied inside each node's container; healing is one flush per node."""

    def __init__(self, nodes: Callable[[], list[KafkaNode]], zookeeper: Callable[[], KafkaNode | None]) -> None:
        self._nodes, self._zookeeper = nodes, zookeeper
        self.grudge: dict[int, set[int]] = {}
        self.link_rules: dict[int, list[str]] = {}

    def _node(self, node_id: int) -> KafkaNode:
        return next(n for n in self._nodes() if n.node_id == node_id)

    def partition(self, grudge: dict[int, set[int]]) -> None:
        """Apply a grudge: each node drops every packet from the peers it names (broker to broker only)."""
        self.grudge = {k: set(v) for k, v in grudge.items() if v}
        for node in self._nodes():
            self.apply(node)

    def link_fault(self, node_id: int, fragment: str) -> None:
        """Add a client-side or link rule (port block, TCP reset, packet loss, bandwidth) to one node."""
        self.link_rules.setdefault(node_id, []).append(fragment)
        self.apply(self._node(node_id))

    def clear(self) -> None:
        """Forget every grudge and link rule (the next `apply` of each node removes them)."""
        self.grudge.clear()
        self.link_rules.clear()

    def apply(self, node: KafkaNode) -> None:
        """Make a running node's rules what the state says (nothing to do for a stopped or paused node)."""
        if node.state() != "running":
            return
        peers = [self._node(p).ip() for p in sorted(self.grudge.get(node.node_id, ()))]
        zookeeper = self._zookeeper()
        if zookeeper and zookeeper.node_id in self.grudge.get(node.node_id, ()):
            peers.append(zookeeper.ip())
        script = netrules.script(netrules.FLUSH, netrules.drop_from(peers) if peers else "",
                                 *self.link_rules.get(node.node_id, []))
        code, out = node.sh(script)
        if code != 0:
            raise ClusterError(f"network rules on {node.alias} failed (exit {code}): {out.strip()[-300:]}")

    def rules(self, node_id: int) -> str:
        """The iptables and tc state inside a node (for tests and reports)."""
        return self._node(node_id).sh(f"iptables -S {netrules.CHAIN} 2>&1; tc qdisc show dev eth0")[1]

    def isolated(self) -> set[int]:
        """Brokers that currently drop or are dropped by a peer, or refuse clients."""
        cut = set(self.grudge) | set(self.link_rules)
        for peers in self.grudge.values():
            cut |= peers
        return cut
