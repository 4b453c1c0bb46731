"""The ZooKeeper-to-KRaft migration without a cluster: the steps in the order Kafka's docs give,
each node held from other lines only while it changes, and each phase's settings."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from types import SimpleNamespace

from contracts.history import HistoryWriter, read_jsonl
from faults import plan, rolls, schedule
from harness import migration
from harness.broker_config import ClusterSpec, broker_properties
from kchaos.catalog import catalog, fault_spec, load
from tests.unit.test_upgrade_op import liveness


class MigratingCluster:
    """Brokers 1-3 in ZooKeeper mode; records each step and what the nemesis held meanwhile."""

    def __init__(self, nemesis_held, copies: bool = True, refused=None) -> None:
        self.steps: list[tuple] = []
        self.nemesis_held, self.copies, self.on_kraft = nemesis_held, copies, False
        self.refused = refused or {}
        self.migration = self
        self.metadata = SimpleNamespace(wait_full_isr=lambda topic, timeout_s: None,
                                        wait_for=self._wait_for)
        self.releases = dict.fromkeys([1, 2, 3], "3.9.2")

    def _wait_for(self, what, check, timeout_s):
        if not check():
            raise rolls.ClusterError(f"Timed out after {timeout_s:.0f}s waiting for {what}")

    def node_ids(self) -> list[int]:
        return [1, 2, 3]

    def node(self, node_id: int):
        return SimpleNamespace(state=lambda: "running")

    def start_quorum(self) -> list[int]:
        self.steps.append(("quorum",))
        return [3001, 3002, 3003]

    def step(self, node_id: int, phase: str) -> None:
        self.steps.append((phase, node_id, dict(self.nemesis_held())))
        self.stepped_at = time.monotonic()

    def copied(self) -> bool:
        self.steps.append(("copied",))
        self.copied_at = time.monotonic()
        return self.copies

    def conflicts(self) -> dict[int, int]:
        return self.refused

    def brokers_on_kraft(self) -> None:
        self.steps.append(("on-kraft",))

    def inventory(self, plant: bool = False) -> list[str]:
        self.steps.append(("inventory", plant))
        return ["topic chaos: partitions=3"]


def _fire(tmp_path, cluster_of, before=None, dwell: float = 0) -> tuple[dict, MigratingCluster]:
    history = HistoryWriter(tmp_path)
    nemesis = None
    cluster = cluster_of(lambda: nemesis.held)
    faults = [fault_spec(fault="migrate", **{"for": dwell}), fault_spec(fault="kill")]
    op = plan.PlannedOp(1.0, 0, "migrate", 0.0)
    nemesis = schedule.Nemesis(cluster, "chaos", faults, [op], 1, history)
    nemesis.t0_ns = 0
    if before:
        before(nemesis)
    nemesis.fire(op)
    history.close(compact=False)
    (row,) = read_jsonl(tmp_path, "faults").to_pylist()
    return row, cluster


def test_a_migration_steps_every_node_in_the_docs_order_holding_only_the_node_it_changes(tmp_path):
    row, cluster = _fire(tmp_path, MigratingCluster)
    assert row["outcome"] == "fired", row
    phases = [s[:2] for s in cluster.steps]
    assert phases == [("inventory", True), ("quorum",), ("dual-write", 1), ("dual-write", 2),
                      ("dual-write", 3), ("copied",), ("kraft", 1), ("kraft", 2), ("kraft", 3),
                      ("on-kraft",), ("controller", 3001), ("controller", 3002),
                      ("controller", 3003), ("inventory", False)]
    assert all(s[2] == {s[1]: 0} for s in cluster.steps if len(s) == 3)
    assert '"kraft": [1, 2, 3]' in row["detail"] and '"copied_at_s"' in row["detail"]
    assert '"conflicts": {}' in row["detail"]
    assert '"inventory": {"before": ["topic chaos: partitions=3"], "after": ["topic chaos: ' in (
        row["detail"])


def test_a_migration_whose_metadata_never_copied_is_a_liveness_finding_and_left_zk_brokers(
        tmp_path, monkeypatch):
    monkeypatch.setattr(rolls, "COPY_S", 0.1)
    row, cluster = _fire(tmp_path, lambda held: MigratingCluster(held, copies=False))
    assert row["outcome"] == "no-effect", row
    assert "waiting for the controllers to copy the metadata from ZooKeeper" in row["detail"]
    assert not [s for s in cluster.steps if s[0] in ("kraft", "on-kraft")]
    assert liveness(tmp_path) == ["migrate: Timed out after 0s waiting for the "
                                  "controllers to copy the metadata from ZooKeeper"]


def test_a_migration_the_run_ended_halfway_had_no_effect(tmp_path):
    def hold_broker_3(nemesis):
        nemesis.claim(1, [3])  # the kill line holds broker 3 past the run's end
        threading.Timer(0.5, nemesis.stop_event.set).start()
    row, cluster = _fire(tmp_path, MigratingCluster, hold_broker_3)
    assert row["outcome"] == "no-effect", row
    assert "the run ended with dual-write rolled on [1, 2] of [1, 2, 3]" in row["detail"]
    assert liveness(tmp_path) == []  # the run's end, not the cluster, cut it short
    # a write or two fenced as leadership moved is no wedge
    row, _ = _fire(tmp_path / "fenced", lambda held: MigratingCluster(held, refused={3001: 2}),
                   hold_broker_3)
    assert row["outcome"] == "no-effect" and liveness(tmp_path / "fenced") == [], row


def test_a_migration_cut_short_while_zookeeper_refused_dual_writes_is_a_liveness_finding(
        tmp_path):
    def hold_broker_3(nemesis):
        nemesis.claim(1, [3])  # the run ends before broker 3's turn, as the wedge makes it
        threading.Timer(0.5, nemesis.stop_event.set).start()
    row, _ = _fire(tmp_path, lambda held: MigratingCluster(held, refused={3003: 85, 3001: 2}),
                   hold_broker_3)
    assert row["outcome"] == "no-effect", row
    (found,) = liveness(tmp_path)
    assert found.startswith(
        "migrate: ZooKeeper refused 87 dual writes on /migration's version (2 by controller 3001, "
        "85 by controller 3003), the migration driver's wedge "
        "(docs/findings/kraft-migration-driver-wedged); the run ended with dual-write rolled on "
        "[1, 2] of [1, 2, 3]; raise duration"), found


def test_the_controllers_refused_writes_are_counted_from_their_logs():
    line = "org.apache.zookeeper.KeeperException$BadVersionException: KeeperErrorCode = BadVersion"
    logs = {3001: "", 3002: f"{line} for /migration\nWill retry\n{line} for /migration\n",
            3003: f"{line} for /brokers\n"}
    cluster = SimpleNamespace(controllers=[SimpleNamespace(node_id=i, log_text=lambda t=t: t)
                                           for i, t in logs.items()])
    assert migration.Migration(cluster).conflicts() == {3002: 2}


def test_each_phase_gives_the_settings_kafkas_migration_docs_name():
    spec = ClusterSpec("3.9.2", 3, "zookeeper", {"min.insync.replicas": "2"})
    zk = broker_properties(spec, 2, "kafka-2", 4000)
    dual = migration.dual_write(zk, "3.9.2")
    assert dual["zookeeper.metadata.migration.enable"] == "true" and dual["broker.id"] == "2"
    assert dual["inter.broker.protocol.version"] == "3.9"
    assert dual["controller.quorum.voters"] == ("3001@controller-3001:9093,3002@controller-3002:"
                                                "9093,3003@controller-3003:9093")
    kraft = migration.kraft_broker(dual, 2)
    assert kraft["process.roles"] == "broker" and kraft["node.id"] == "2"
    assert not {"broker.id", "zookeeper.connect", "zookeeper.metadata.migration.enable",
                "inter.broker.protocol.version"} & set(kraft)
    assert kraft["advertised.listeners"] == zk["advertised.listeners"]
    during = migration.controller(spec, 3001, migrating=True)
    assert during["zookeeper.connect"] == "zookeeper:2181"
    assert during["process.roles"] == "controller"
    after = migration.controller(spec, 3001, migrating=False)
    assert not {"zookeeper.connect", "zookeeper.metadata.migration.enable"} & set(after)
    # the controllers elect leaders: the scenario's settings are theirs too
    assert after["min.insync.replicas"] == "2"
    assert after["unclean.leader.election.enable"] == "false"


def test_the_controllers_keep_zookeepers_default_session_unless_the_scenario_sets_one():
    spec = ClusterSpec("3.9.2", 3, "zookeeper", {})
    assert broker_properties(spec, 1, "kafka-1", 4000)["zookeeper.session.timeout.ms"] == "6000"
    assert "zookeeper.session.timeout.ms" not in migration.controller(spec, 3001, migrating=True)
    spec.config["zookeeper.session.timeout.ms"] = "6000"  # the setting the wedge was found with
    assert migration.controller(spec, 3001, True)["zookeeper.session.timeout.ms"] == "6000"


def test_a_migration_step_after_which_the_isr_never_fills_is_a_liveness_finding(tmp_path):
    def isr_never_fills(held):
        cluster = MigratingCluster(held)
        full = iter([True, False])  # full after broker 1's step, never after broker 2's

        def wait(topic, timeout_s):
            if not next(full):
                raise rolls.ClusterError(f"Timed out after {timeout_s:.0f}s waiting")
        cluster.metadata.wait_full_isr = wait
        return cluster
    row, cluster = _fire(tmp_path, isr_never_fills)
    assert row["outcome"] == "no-effect", row
    assert [s[:2] for s in cluster.steps][2:] == [("dual-write", 1), ("dual-write", 2)]
    assert liveness(tmp_path) == ["migrate: broker 2 into dual-write, then no full ISR on chaos: "
                                  "Timed out after 180s waiting"]


def test_the_wedges_reproduction_is_the_migration_as_the_finding_ran_it():
    wedge = Path(__file__).parents[2] / "docs/findings/kraft-migration-driver-wedged"
    (short,) = load(wedge / "short-session.yaml", environment=False)
    (ours,) = load(catalog()["migrate-zk-to-kraft"], environment=False)
    # three differences: the controllers' session, the leader kills' pace and the duration
    assert short.seed == 43 and short.kafka.config == {"zookeeper.session.timeout.ms": 6000}
    assert short.kafka.model_copy(update={"config": {}}) == ours.kafka
    assert (short.faults[1].every, ours.faults[1].every) == (30, 40)
    assert (short.duration, ours.duration) == (300, 420)
    kept = short.model_copy(update={"faults": [short.faults[0], ours.faults[1], *short.faults[2:]]})
    same = {"topic", "producer", "consumer", "faults"}
    assert kept.model_dump(include=same) == ours.model_dump(include=same)


def test_the_op_s_for_keeps_the_cluster_in_dual_write_mode_after_the_copy(tmp_path):
    row, cluster = _fire(tmp_path, MigratingCluster, dwell=0.5)
    kinds = [s[0] for s in cluster.steps]
    assert row["outcome"] == "fired" and kinds.index("copied") < kinds.index("kraft"), kinds
    assert cluster.stepped_at - cluster.copied_at >= 0.5  # the last step came after the dwell
