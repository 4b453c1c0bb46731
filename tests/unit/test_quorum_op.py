"""The quorum-swap fault without a cluster: a spare added, the active controller removed, each
retried until the voters show it, the disruption healed, and a change that never shows a liveness
finding."""

from __future__ import annotations

import random
import re
import threading
from types import SimpleNamespace

import pytest

from contracts.errors import ClusterError, UsageError
from contracts.faultlines import FaultSpec
from faults import quorum
from faults.ops import Ctx, NoEffect, Stalled
from faults.registry import OPS
from harness.broker_config import ClusterSpec, broker_properties
from harness.quorum import reason
from kchaos.catalog import validate


class Voters:
    """Voters 1-3 led by 1; `refuse` counts the calls of each verb that fail before one lands."""

    def __init__(self, refuse: dict[str, int] | None = None, lands: bool = True,
                 added_leads: bool = False) -> None:
        self.voters, self.leader, self.calls = {1, 2, 3}, 1, []
        self.refuse, self.lands, self.added_leads = dict(refuse or {}), lands, added_leads

    def status(self) -> tuple[int, list[int]]:
        return self.leader, sorted(self.voters)

    def _call(self, verb: str, node: int) -> None:
        self.calls.append((verb, node))
        if self.refuse.get(verb, 0) > 0:
            self.refuse[verb] -= 1
            raise ClusterError(f"{verb} {node}: NOT_LEADER_OR_FOLLOWER\nstack")
        if self.lands:
            (self.voters.add if verb == "add" else self.voters.discard)(node)
            if verb == "remove":
                self.leader = min(self.voters - {node})
            elif self.added_leads:
                self.leader = node

    def add(self, node: int) -> None:
        self._call("add", node)

    def remove(self, node: int) -> None:
        self._call("remove", node)


class Cluster:
    def __init__(self, voters: Voters) -> None:
        self.quorum, self.did = voters, []
        self.firewall = SimpleNamespace(partition=lambda grudge, owner: self.did.append(
                                            ("cut", sorted(grudge))),
                                        lift=lambda owner: self.did.append(("lift",)))

    def node_ids(self) -> list[int]:
        return [1, 2, 3, 4]

    def zookeeper_ids(self) -> list[int]:
        return []

    def node(self, node_id: int):
        down = ({d[1] for d in self.did if d[0] == "kill"}
                - {n for d in self.did if d[0] == "start" for n in d[1:]})
        return SimpleNamespace(state=lambda: "exited" if node_id in down else "running",
                               kill=lambda: self.did.append(("kill", node_id)))

    def start_nodes(self, node_ids) -> None:
        self.did.append(("start", *node_ids))


def swap(voters: Voters, **line) -> tuple[dict, Cluster]:
    cluster = Cluster(voters)
    ctx = Ctx(cluster, "chaos", random.Random(0), threading.Event())  # type: ignore[arg-type]
    line = FaultSpec(fault="quorum-swap", **{"for": 0}, **line)
    return OPS["quorum-swap"](ctx, line, []), cluster


def test_a_swap_adds_the_node_outside_the_voters_then_removes_the_active_controller():
    voters = Voters()
    detail, cluster = swap(voters)
    assert voters.calls == [("add", 4), ("remove", 1)] and cluster.did == []
    assert (detail["added"], detail["removed"]) == (4, 1)
    assert (detail["voters_before"], detail["voters_after"]) == ([1, 2, 3], [2, 3, 4])


def test_when_the_added_node_leads_by_then_the_lowest_other_voter_is_removed():
    detail, _ = swap(Voters(added_leads=True))
    assert (detail["added"], detail["removed"], detail["voters_after"]) == (4, 1, [2, 3, 4])
    voters = Voters(added_leads=True)
    voters.leader = 2
    assert swap(voters)[0]["removed"] == 1  # 2 led when the op began; 4 leads when it removes


def test_the_removed_controller_killed_meanwhile_is_started_again_and_the_removal_retried():
    voters = Voters(refuse={"remove": 1})
    detail, cluster = swap(voters, disrupt="kill-removed")
    assert cluster.did == [("kill", 1), ("start", 1)]
    assert voters.calls == [("add", 4), ("remove", 1), ("remove", 1)]
    assert detail["steps"]["remove"] == {"tries": 2, "disrupted": "kill-removed",
                                         "errors": ["remove 1: NOT_LEADER_OR_FOLLOWER"]}
    assert detail["steps"]["add"]["disrupted"] == "none"


class Mute(Voters):
    """The first add times out with no message and does not land."""

    def add(self, node: int) -> None:
        if not self.calls:
            self.calls.append(("add", node))
            raise TimeoutError
        super().add(node)


def test_a_failed_call_with_no_message_is_recorded_by_its_type():
    voters = Mute()
    detail, _ = swap(voters)
    assert voters.calls == [("add", 4), ("add", 4), ("remove", 1)]
    assert detail["steps"]["add"] == {"tries": 2, "disrupted": "none", "errors": ["TimeoutError"]}


def test_the_added_controller_is_cut_off_from_every_other_node_then_the_cut_lifted():
    detail, cluster = swap(Voters(), disrupt="isolate-added")
    assert cluster.did == [("cut", [1, 2, 3, 4]), ("lift",)]
    assert detail["steps"]["add"]["disrupted"] == "isolate-added"


def test_a_change_the_voters_never_show_is_a_liveness_finding(monkeypatch):
    monkeypatch.setattr(quorum, "SETTLE_S", 0.0)
    with pytest.raises(Stalled, match=r"never showed 4 added within 0 s \(1 tries"):
        swap(Voters(lands=False))


def test_four_voters_left_by_a_swap_cut_short_lose_the_leader_and_three_are_no_effect():
    voters = Voters()
    voters.voters = {1, 2, 3, 4}
    detail, _ = swap(voters)
    assert (detail["added"], detail["removed"], detail["voters_after"]) == (None, 1, [2, 3, 4])
    assert voters.calls == [("remove", 1)]
    voters = Voters()
    voters.voters = {1, 2, 4}  # node 3 observes, but the fake cluster's node 3 is not running
    cluster = Cluster(voters)
    cluster.node = lambda n: SimpleNamespace(state=lambda: "exited")
    ctx = Ctx(cluster, "chaos", random.Random(0), threading.Event())  # type: ignore[arg-type]
    with pytest.raises(NoEffect, match=r"no running node outside the voters \[1, 2, 4\]"):
        OPS["quorum-swap"](ctx, FaultSpec(fault="quorum-swap"), [])


@pytest.mark.parametrize(("kafka", "says"), [
    ({"version": "4.3.1", "brokers": 3}, "swaps a fourth node into the three voters, but "
                                         "kafka.brokers=3; set kafka.brokers: 4 or 5"),
    ({"version": "3.8.1", "brokers": 4}, "changes a dynamic KRaft quorum (KIP-853, Kafka 3.9+ in "
                                         "KRaft mode), not kafka.version='3.8.1'"),
])
def test_a_swap_line_needs_a_dynamic_quorum_release_and_a_fourth_node(kafka, says):
    with pytest.raises(UsageError, match=re.escape(says)):
        validate({"name": "q", "duration": "30s", "kafka": kafka,
                  "faults": [{"fault": "quorum-swap"}]}, "q")


def test_a_dynamic_quorums_controllers_advertise_their_controller_listener():
    # add-controller hands the quorum the advertised endpoint; 0.0.0.0 would send votes home
    dynamic = broker_properties(ClusterSpec(brokers=4, dynamic_quorum=True), 4, "kafka-4", 20001)
    assert "CONTROLLER://kafka-4:9093" in dynamic["advertised.listeners"].split(",")
    static = broker_properties(ClusterSpec(brokers=4), 1, "kafka-1", 20001)
    assert "CONTROLLER" not in static["advertised.listeners"]


def test_a_failed_tool_call_is_recorded_with_the_tools_own_reason():
    out = ("[2026-12-07 05:48:31,002] WARN [AdminClient clientId=adminclient-1] Connection to node"
           " -2 could not be established.\n"
           "org.apache.kafka.common.errors.TimeoutException: Timed out waiting for a node"
           " assignment. Call: addRaftVoter\n"
           "java.util.concurrent.ExecutionException: org.apache.kafka.common.errors.Timeout...\n"
           "\tat java.base/java.util.concurrent.CompletableFuture.reportGet(Unknown Source)\n")
    assert reason(out) == ("org.apache.kafka.common.errors.TimeoutException: Timed out waiting"
                           " for a node assignment. Call: addRaftVoter")
    assert reason("\tat x\n[log]\n") == "no reason in its output" and len(reason("E" * 900)) == 200
