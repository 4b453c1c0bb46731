"""A ZooKeeper-mode cluster's partition state read where the leader writes it, and preferred-leader
elections asked of its controller the way kafka-preferred-replica-election.sh asks (a node under
/admin)."""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import dataclass

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, NodeExistsError, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

from contracts.errors import ClusterError

ELECTION_PATH = "/admin/preferred_replica_election"


@dataclass(frozen=True)
class PartitionState:
    """A partition's leader, leader epoch and ISR as stored in ZooKeeper (ahead of any broker's
    metadata cache)."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]

    def __str__(self) -> str:
        return f"leader {self.leader}, leader epoch {self.leader_epoch}, ISR {list(self.isr)}"


class ZooKeeper:
    """A session with the cluster's ZooKeeper, reached on its container's address."""

    def __init__(self, address: str, timeout_s: float = 10.0) -> None:
        self._client = KazooClient(hosts=address, timeout=timeout_s)
        self._address, self._timeout_s = address, timeout_s

    def __enter__(self) -> ZooKeeper:
        try:
            self._client.start(timeout=self._timeout_s)
        except Exception as exc:
            raise ClusterError(f"ZooKeeper at {self._address} did not answer: {exc}") from exc
        return self

    def __exit__(self, *exc: object) -> None:
        self._client.stop()
        self._client.close()

    def partition(self, topic: str, partition: int) -> PartitionState:
        """The partition's state node, read now."""
        data, _ = self._client.get(f"/brokers/topics/{topic}/partitions/{partition}/state")
        state = json.loads(data)
        return PartitionState(state["leader"], state["leader_epoch"], tuple(state["isr"]))

    def controller(self) -> int:
        """The controller /controller names: a broker, or the KRaft controller that took over in a
        migration; -1 when there is none."""
        try:
            data, _ = self._client.get("/controller")
        except NoNodeError:
            return -1
        except (KazooException, KazooTimeoutError) as exc:
            raise ClusterError(f"ZooKeeper at {self._address} stopped answering: {exc}") from exc
        return int(json.loads(data)["brokerid"])

    def await_absent(self, paths: list[str], deadline: float) -> bool:
        """Wait until none of the znodes exists (a dead session's ephemeral nodes go when it
        expires), or until `deadline` (time.monotonic()); whether they are gone."""
        try:
            while any(self._client.exists(p) for p in paths):
                if time.monotonic() >= deadline:
                    return False
                time.sleep(0.2)
        except (KazooException, KazooTimeoutError) as exc:
            raise ClusterError(f"ZooKeeper at {self._address} stopped answering: {exc}") from exc
        return True

    def elect_preferred(self, topic: str, partition: int) -> None:
        """Ask the controller to move the partition's leadership to its preferred (first assigned)
        replica; a request still pending (the controller has not taken it yet) stands for this
        one."""
        body = json.dumps({"version": 1,
                           "partitions": [{"topic": topic, "partition": partition}]}).encode()
        with contextlib.suppress(NodeExistsError):
            self._client.create(ELECTION_PATH, body)
