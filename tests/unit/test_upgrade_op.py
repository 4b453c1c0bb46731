"""The upgrade fault without a cluster: one op per line, each broker held from other lines only
while it rolls, feature levels finalized once every broker runs the release; and the rolling
restart's wait for a full ISR."""

from __future__ import annotations

import io
import json
import tarfile
import threading
from types import SimpleNamespace

from contracts.errors import ClusterError
from contracts.history import HistoryWriter, read_jsonl
from contracts.scenario import FaultSpec
from faults import plan, schedule
from harness import releases
from kchaos.catalog import fault_spec

UPGRADE = fault_spec(fault="upgrade", to="4.4.0", **{"for": 0})


class RollingCluster:
    """Brokers 1-3 on 3.9.2; says which brokers the nemesis held while each one rolled."""

    def __init__(self, nemesis_held) -> None:
        self.releases = {1: "3.9.2", 2: "3.9.2", 3: "3.9.2"}
        self.held_while, self.finalized = {}, 0
        self.nemesis_held = nemesis_held
        self.states = dict.fromkeys(self.releases, "running")
        self.metadata = SimpleNamespace(wait_full_isr=lambda topic, timeout_s: None)

    def node_ids(self) -> list[int]:
        return [1, 2, 3]

    def node(self, node_id: int):
        def stop() -> None:
            self.states[node_id] = "exited"
        return SimpleNamespace(state=lambda: self.states[node_id], terminate=stop, kill=stop)

    def start_node(self, node_id: int) -> None:
        self.states[node_id] = "running"

    def upgrade_node(self, node_id: int, version: str) -> None:
        self.held_while[node_id] = dict(self.nemesis_held())
        self.releases[node_id] = version

    def finalize_features(self, node_id: int) -> dict[str, str]:
        self.finalized += 1
        self.held_while["finalize"] = dict(self.nemesis_held())
        return {"metadata.version": "33"}


def _fire(tmp_path, line: FaultSpec, before=None) -> tuple[dict, RollingCluster]:
    """Fire the upgrade (or other roll) `line`'s op beside a kill line, `before(nemesis, cluster)`
    first; its faults row and the cluster."""
    history = HistoryWriter(tmp_path)
    nemesis = None
    cluster = RollingCluster(lambda: nemesis.held)
    op = plan.PlannedOp(1.0, 0, line.fault, 0.0)
    nemesis = schedule.Nemesis(cluster, "chaos", [line, fault_spec(fault="kill")], [op], 1,
                               history)
    nemesis.t0_ns = 0
    if before:
        before(nemesis, cluster)
    nemesis.fire(op)
    history.close(compact=False)
    (row,) = read_jsonl(tmp_path, "faults").to_pylist()
    return row, cluster


def liveness(tmp_path) -> list[str]:
    """The details of the history's liveness findings."""
    return [e["detail"] for e in read_jsonl(tmp_path, "events").to_pylist()
            if e["kind"] == "liveness"]


def test_an_upgrade_line_plans_one_op_however_long_the_run():
    line = fault_spec(fault="upgrade", to="4.4.0", every=10, after=5, **{"for": 0})
    kill = fault_spec(fault="kill", every=10, after=5)
    ops = plan.plan([line, kill], 120, 1)
    assert [op.at for op in ops if op.index == 0] == [5.0]
    assert len([op for op in ops if op.index == 1]) == 12


def test_an_upgrade_holds_each_broker_in_turn_and_waits_for_one_another_line_holds(tmp_path):
    def kill_line_holds_2(nemesis, cluster):
        assert nemesis.claim(1, [2]) == []  # the kill line holds broker 2 ...
        threading.Timer(0.8, nemesis.release, args=(1,)).start()  # ... and lets go a moment later
    row, cluster = _fire(tmp_path, UPGRADE, kill_line_holds_2)
    assert row["outcome"] == "fired", row
    # broker 1 rolls beside the kill line's hold of 2; 2 rolls once that hold is gone
    # and the finalize holds the broker it runs Kafka's tool on
    assert cluster.held_while == {1: {1: 0, 2: 1}, 2: {2: 0}, 3: {3: 0}, "finalize": {1: 0}}
    assert cluster.releases == dict.fromkeys([1, 2, 3], "4.4.0") and cluster.finalized == 1
    assert cluster.nemesis_held() == {}
    assert '"finalized": {"metadata.version": "33"}' in row["detail"]


def test_a_release_archive_unpacks_its_jars_beside_the_images_and_points_start_sh_at_them():
    with tarfile.open(fileobj=io.BytesIO(releases.archive("4.3.1"))) as tar:
        names = tar.getnames()
        pointer = tar.extractfile(releases.RELEASE_FILE).read().decode()
    assert pointer == "/opt/kafka/releases/4.3.1/libs"
    assert "releases/4.3.1/libs/kafka-clients-4.3.1.jar" in names
    assert all(n.startswith("releases/4.3.1/libs/") for n in names if n != releases.RELEASE_FILE)


def test_the_levels_a_finalize_printed_are_read_and_nothing_else():
    out = "Picked up JAVA_TOOL_OPTIONS: -Xss1m=x\nlevel metadata.version=33\nlevel share.version=2"
    assert releases.parse_levels(out) == {"metadata.version": "33", "share.version": "2"}
    assert "kraft.version" in releases.finalize_script("4.4.0")
    assert "--metadata" in releases.finalize_script("3.9.2")


def test_a_roll_the_run_ended_halfway_had_no_effect_and_finalized_nothing(tmp_path):
    def another_line_holds_3(nemesis, cluster):
        nemesis.claim(5, [3])  # another line holds broker 3 past the run's end
        threading.Timer(0.5, nemesis.stop_event.set).start()
    row, cluster = _fire(tmp_path, UPGRADE, another_line_holds_3)
    assert row["outcome"] == "no-effect", row
    assert "brokers [3] not yet on 4.4.0 (rolled: [1, 2])" in row["detail"]
    assert cluster.finalized == 0


def test_no_broker_rolls_and_nothing_is_finalized_once_the_run_ended(tmp_path):
    def run_ends_while_2_rolls(nemesis, cluster):
        rolled = cluster.upgrade_node

        def upgrade_node(node_id: int, version: str) -> None:
            rolled(node_id, version)
            if node_id == 2:
                nemesis.stop_event.set()  # the workload ends while broker 2 rolls, 3 unheld
        cluster.upgrade_node = upgrade_node
    row, cluster = _fire(tmp_path, UPGRADE, run_ends_while_2_rolls)
    assert row["outcome"] == "no-effect", row
    assert "brokers [3] not yet on 4.4.0 (rolled: [1, 2])" in row["detail"]
    assert cluster.releases[3] == "3.9.2" and cluster.finalized == 0


def test_a_rollback_rolls_each_broker_forward_then_back_and_finalizes_nothing(tmp_path):
    row, cluster = _fire(tmp_path, fault_spec(fault="upgrade", to="4.4.0", rollback=True,
                                              **{"for": 0}))
    assert row["outcome"] == "fired", row
    detail = json.loads(row["detail"])
    assert [(r["broker"], r["from"], r["to"]) for r in detail["rolled"]] == [
        (1, "3.9.2", "4.4.0"), (2, "3.9.2", "4.4.0"), (3, "3.9.2", "4.4.0"),
        (1, "4.4.0", "3.9.2"), (2, "4.4.0", "3.9.2"), (3, "4.4.0", "3.9.2")]
    assert cluster.releases == dict.fromkeys([1, 2, 3], "3.9.2")
    assert cluster.finalized == 0 and detail["finalized"] == {}


def test_an_isr_that_never_fills_after_a_broker_rolls_is_a_liveness_finding(tmp_path):
    def isr_never_fills(nemesis, cluster):
        def timeout(topic, timeout_s):
            raise ClusterError(f"Timed out after {timeout_s:.0f}s waiting for a full ISR")
        cluster.metadata.wait_full_isr = timeout
    row, cluster = _fire(tmp_path, UPGRADE, isr_never_fills)
    assert row["outcome"] == "no-effect", row
    assert cluster.releases == {1: "4.4.0", 2: "3.9.2", 3: "3.9.2"} and cluster.finalized == 0
    assert liveness(tmp_path) == ["upgrade: broker 1 onto 4.4.0, then no full ISR on chaos: "
                                  "Timed out after 180s waiting for a full ISR"]


def test_a_rolling_restart_whose_isr_never_fills_is_a_liveness_finding_not_a_failed_op(tmp_path):
    waited = []

    def isr_never_fills(nemesis, cluster):
        def timeout(topic, timeout_s):
            waited.append(timeout_s)
            raise ClusterError(f"Timed out after {timeout_s:.0f}s waiting for a full ISR")
        cluster.metadata.wait_full_isr = timeout
    row, cluster = _fire(tmp_path, fault_spec(fault="rolling-restart", **{"for": 0}),
                         isr_never_fills)
    assert row["outcome"] == "no-effect", row
    # broker 1 is back, brokers 2 and 3 were never stopped
    assert waited == [180.0] and set(cluster.states.values()) == {"running"}
    assert liveness(tmp_path) == ["terminate roll: broker 1 restarted, then no full ISR on "
                                  "chaos: Timed out after 180s waiting for a full ISR"]
