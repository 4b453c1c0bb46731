"""Which JRE, metadata mode and replication fixes each Kafka version gets, and how a regression file
expands."""

from __future__ import annotations

import pytest

from contracts.errors import UsageError
from contracts.versions import (
    default_metadata,
    java_for,
    metadata_problem,
    release,
    replica_fencing,
)
from harness.jars import nearest
from kchaos.catalog import catalog, load
from kchaos.overrides import kafka_target, override, target_problem
from reports.guarantees import RULES


@pytest.mark.parametrize("version, java, mode",
                         [("0.10.2.2", 8, "zookeeper"), ("2.0.1", 8, "zookeeper"),
                          ("2.1.0", 11, "zookeeper"), ("3.0.2", 11, "zookeeper"),
                          ("3.1.0", 17, "zookeeper"), ("3.3.1", 17, "kraft"),
                          ("4.3.1", 17, "kraft")])
def test_each_version_gets_the_jre_it_was_built_with_and_its_default_mode(version, java, mode):
    assert (java_for(version), default_metadata(version)) == (java, mode)


def test_metadata_modes_a_version_cannot_run_are_refused_with_the_fix():
    assert "needs kafka.metadata='zookeeper'" in metadata_problem("3.2.3", "kraft")
    assert "needs kafka.metadata='kraft'" in metadata_problem("4.0.0", "zookeeper")
    assert metadata_problem("3.9.2", "zookeeper") is None and metadata_problem(
        "3.3.1", "kraft") is None


def test_nearest_versions_prefer_the_same_line():
    known = ["2.0.0", "2.0.1", "2.1.0", "2.8.2", "3.9.2", "4.3.1"]
    assert nearest("2.0.9", known) == ["2.0.0", "2.0.1", "2.1.0"]
    assert nearest("4.9.0", known, n=1) == ["4.3.1"]


@pytest.mark.parametrize("version, kip",
                         [("0.10.2.2", "KIP-101"), ("1.1.1", "KIP-279"), ("2.0.0", "KIP-320"),
                                          ("2.1.0", "KIP-101")])
def test_replica_fencing_names_the_kip_a_version_has_or_lacks(version, kip):
    words, link = replica_fencing(version)
    assert kip in words and kip in link


def test_forbidden_loss_on_an_old_version_says_what_it_lacks_and_stays_forbidden():
    (old,) = override(load(catalog()["acks-all-leader-kill"]), "1.1.1", None, None)
    rule = RULES["lost-write"](old)
    assert not rule.allowed and "KIP-279" in rule.why
    (new,) = override([old], "4.3.1", None, None)
    assert "KIP-279" not in RULES["lost-write"](new).why


def test_a_regression_runs_on_the_affected_and_the_fixed_version_and_one_override_runs_once():
    runs = load(catalog()["kip101-hw-truncation"])
    assert [(s.kafka.version, s.regression.affected) for s in runs] == [("0.10.2.2", "0.10.2.2"),
                                                                         ("0.11.0.3", "0.10.2.2")]
    (only,) = override(runs, "2.0.1", None, None)
    assert only.name == "kip101-hw-truncation[version=2.0.1]" and release(only.kafka.version) == (
        2, 0, 1)


def test_kafka_version_with_a_mode_runs_that_version_in_that_mode_and_a_bad_mode_names_the_fix():
    (zk,) = override(load(catalog()["acks-all-leader-kill"]), "3.9.2:zookeeper", None, None)
    # no mode given: the scenario's, here the one just set
    (kraft,) = override([zk], "3.9.2", None, None)
    assert (zk.kafka.version, zk.kafka.mode, kraft.kafka.mode) == (
        "3.9.2", "zookeeper", "zookeeper")
    assert override([zk], "3.9.2:kraft", None, None)[0].kafka.mode == "kraft"
    with pytest.raises(UsageError,
                       match=r"--kafka VERSION, VERSION:kraft or VERSION:zookeeper .* got --kafka "
                                         r"'3.9.2:zk'"):
        override([zk], "3.9.2:zk", None, None)
    only_zk = load(catalog()["kip101-power-loss-divergence"])[0]  # its op watches ZooKeeper
    assert not only_zk.runs_on("3.9.2") and only_zk.runs_on("3.9.2", "zookeeper")
    assert "KRaft" in only_zk.version_problem("3.9.2", "kraft")


def test_a_scenario_that_sets_its_metadata_mode_runs_in_that_mode_only():
    # a fetch timeout elects KRaft controllers only
    (kraft,) = load(catalog()["latency-slow-controller"])
    assert kraft.runs_on("3.9.2") and kraft.runs_on("3.9.2", "kraft") and not kraft.runs_on(
        "3.9.2", "zookeeper")
    assert "mode only" in kraft.version_problem("3.9.2", "zookeeper")
    assert "KRaft" in kraft.version_problem("2.8.2")


def test_an_upgrade_path_starts_at_a_and_rolls_every_upgrade_line_to_b():
    up = load(catalog()["upgrade-4.3-to-4.4"])[0]
    (moved,) = override([up], "3.9.2->4.3.1", None, None)
    assert (moved.kafka.version, [f.to for f in moved.faults if f.to]) == (
        "3.9.2", ["4.3.1"])
    assert target_problem(up, "3.9.2->4.3.1") is None
    assert "faults.0.to='4.4.0' is not newer" in target_problem(up, "4.4.0")
    # its own line goes to 4.4.0; on the path it goes to 4.5.0, so it starts from 4.4.0
    assert target_problem(up, "4.4.0->4.5.0") is None
    assert "needs an upgrade line (one with `to:`)" in target_problem(
        load(catalog()["acks-all-leader-kill"])[0], "3.9.2->4.4.0")
    assert target_problem(up, "4.4.0->4.3.1").startswith(
        "--kafka 4.4.0->TO='4.3.1' is not newer than kafka.version='4.4.0'")
    assert "migrates to KRaft on 3.9" in target_problem(up, "3.9.2:zookeeper->4.4.0")
    migrate = load(catalog()["migrate-zk-to-kraft"])[0]
    assert target_problem(migrate, "3.9.2:zookeeper->kraft") is None
    assert "needs a line that migrates the cluster" in target_problem(up, "3.9.2:zookeeper->kraft")
    with pytest.raises(UsageError, match=r"an upgrade path such as 3.9.2->4.4.0 .* got --kafka "
                                         r"'3.9.2->'"):
        kafka_target("3.9.2->")
    with pytest.raises(UsageError, match="quote it"):
        kafka_target("3.9.2-")  # the shell cut `3.9.2->4.4.0` at its unquoted ">"


def test_a_scenario_provoking_the_switch_to_transactions_v2_runs_only_from_a_release_without_it():
    """From 4.3.1 the producers run transactions v2 from the start: no switch to see."""
    txn = load(catalog()["upgrade-txn-3.9-to-4.4"])[0]
    assert target_problem(txn, "3.9.2->4.4.0") is None
    assert target_problem(txn, "4.3.1->4.4.0") == (
        "the scenario exists to provoke txn-protocol-switch, and Kafka 4.3.1 runs transactions v2 "
        "from the start: start it on a 3.x release")
    assert target_problem(load(catalog()["upgrade-4.3-to-4.4"])[0], "4.3.1->4.4.0") is None
