"""The guarantee model: which settings permit which anomalies, and how the verdict composes."""

from __future__ import annotations

import pytest

from contracts.anomalies import ANOMALIES
from contracts.results import plan_share
from contracts.scenario import Scenario
from kchaos.catalog import validate
from reports.analysis import Analysis, Anomaly, Facts, analyze
from reports.citations import LIBRDKAFKA_TIMEOUTS
from reports.guarantees import allowed, rules
from reports.verdict import verdict
from tests.histories import clean

SAFE = {"name": "s", "producer": {"acks": "all", "idempotence": True},
        "topic": {"min_insync_replicas": 2, "unclean_leader_election": False}}


def scenario(**over) -> Scenario:
    raw = {k: dict(v) if isinstance(v, dict) else v for k, v in SAFE.items()}
    for path, value in over.items():
        section, field = path.split("__")
        raw.setdefault(section, {})[field] = value
    return validate(raw, "test")


def analysis(drain_complete=True, replicas=True, **counts) -> Analysis:
    anomalies = {a: Anomaly(counts.get(a.replace("-", "_"), 0), []) for a in ANOMALIES}
    facts = Facts(drain_ran=True, drain_complete=drain_complete,
                  partitions_not_drained=[] if drain_complete else ["chaos-0"],
                  replicas_dumped=replicas, recovered=True, assign_readers=[])
    return Analysis(anomalies, {"acked": 100}, facts)


def test_safe_settings_allow_nothing_but_unseen_and_copies_the_producer_re_sent_itself():
    assert allowed(scenario()) == {"unseen", "timeout-duplicate", "epoch-duplicate"}


@pytest.mark.parametrize("over", [{"producer__acks": "1", "producer__idempotence": False},
                                  {"producer__acks": "0", "producer__idempotence": False},
                                  {"topic__unclean_leader_election": True},
                                  {"topic__min_insync_replicas": 1}])
def test_loss_allowed_by_acks_unclean_or_min_isr(over):
    ok = allowed(scenario(**over))
    assert {"lost-write", "inconsistent-offset", "nonmonotonic-send"} <= ok
    assert "aborted-read" not in ok and "unexpected" not in ok


def test_divergence_and_vanished_reads_only_with_unclean_election():
    assert {"replica-divergence", "vanished-read", "poll-skip", "nonmonotonic-poll"} <= allowed(
        scenario(topic__unclean_leader_election=True))
    assert not {"replica-divergence", "vanished-read"} & allowed(
        scenario(producer__acks="1", producer__idempotence=False))


def test_duplicates_and_reorder_need_non_idempotent_retries():
    plain = allowed(scenario(producer__idempotence=False, producer__retries=3))
    assert "duplicate" in plain and "nonmonotonic-send" in plain
    single = allowed(scenario(producer__idempotence=False, producer__retries=3,
                              producer__max_in_flight=1))
    assert "duplicate" in single and "nonmonotonic-send" not in single
    assert "duplicate" not in allowed(scenario())


def test_without_retries_a_non_idempotent_producer_writes_each_record_once():
    once = scenario(producer__idempotence=False, producer__retries=0)
    assert not {"duplicate", "nonmonotonic-send"} & allowed(once)
    rule = next(r for r in rules(once) if r.anomaly == "duplicate")
    assert "retries=0" in rule.why and rule.doc.endswith("#producerconfigs_retries")


def test_group_at_least_once_is_forbidden_unless_the_log_may_be_truncated():
    assert "committed-unread" not in allowed(scenario())
    assert "committed-unread" in allowed(scenario(producer__acks="1", producer__idempotence=False))
    assert "committed-unread" in allowed(scenario(consumer__commit="before"))


def test_members_starting_at_latest_rest_on_the_groups_offsets_surviving_a_rebalance():
    rule = next(r for r in rules(scenario(consumer__reset="latest"))
                if r.anomaly == "committed-unread")
    assert not rule.allowed and "KIP-211" in rule.doc and "offsets.retention.minutes" in rule.why


def test_unread_group_commits_make_the_verdict_unknown():
    a = analysis()
    a.facts.group_commits = "unknown"
    v = verdict(scenario(), a)
    assert v.valid is None and "committed offsets" in v.unknown_because[0]


def test_every_rule_cites_kafka_documentation():
    for r in rules(scenario()):
        assert (r.doc.startswith(("https://kafka.apache.org/documentation/",
                                  "https://cwiki.apache.org/confluence/display/KAFKA/KIP-"))
                or r.doc == LIBRDKAFKA_TIMEOUTS)
        assert r.why


def test_verdict_false_beats_unknown_beats_true():
    s = scenario()
    assert verdict(s, analysis()).valid is True
    assert verdict(s, analysis(drain_complete=False)).valid is None
    assert verdict(s, analysis(unseen=3)).valid is None
    v = verdict(s, analysis(drain_complete=False, lost_write=1))
    assert v.valid is False and v.forbidden == {"lost-write": 1}
    idle = analysis()
    idle.metrics["acked"] = 0  # a producer that never sent: nothing was tested
    assert verdict(s, idle).unknown_because == ["no send was acknowledged: the workload tested "
                                                "nothing"]


def test_allowed_anomalies_are_counted_but_pass():
    v = verdict(scenario(producer__acks="1", producer__idempotence=False),
                analysis(lost_write=4, duplicate=2))
    assert v.valid is True and v.allowed_seen == {"lost-write": 4, "duplicate": 2}


def test_missing_expected_anomaly_is_a_sensitivity_failure():
    s = validate({**SAFE, "producer": {"acks": "1", "idempotence": False},
                  "expect": ["lost-write"]}, "test")
    v = verdict(s, analysis())
    assert v.valid is True and v.missing_expect == ["lost-write"]
    assert not verdict(s, analysis(lost_write=1)).missing_expect


def test_chaos_that_did_not_happen_makes_a_clean_run_unknown_and_names_the_op(spark, tmp_path):
    h = clean()
    h.fault("kill", [2], planned_at=5.0)
    h.fault("pause", [2], outcome="no-effect", line=1, planned_at=7.0,
            error="pause found it not running: broker 2 is exited, not running")
    h.fault("isolate", [], outcome="skipped", line=2, planned_at=9.0,
            skipped="no node matched target 'leader'")
    h.fault("isolate", [], outcome="not-reached", line=2, planned_at=20.0)
    h.event("nemesis", "liveness", detail="migrate: Timed out after 180s waiting for the copy")
    a = analyze(spark, h.write(tmp_path / "history"))
    assert a.facts.ops == {"fired": 1, "no-effect": 1, "skipped": 1, "not-reached": 1}
    assert a.facts.liveness == ["migrate: Timed out after 180s waiting for the copy"]
    assert not a.facts.recovered
    assert a.facts.chaos_problems == [
        "pause planned at 7.0 s on brokers [2] no-effect: pause found it not running: broker 2 is "
        "exited, not running",
        "fault line 1 (pause) never took effect: 1 no-effect",
        "fault line 2 (isolate) never took effect: 1 not-reached, 1 skipped"]
    v = verdict(scenario(), a)
    assert v.valid is None and len(v.unknown_because) == 3
    assert v.unknown_because[0].startswith("the chaos did not happen as planned: pause planned at "
                                           "7.0 s")


def test_chaos_that_happened_leaves_a_clean_run_true(spark, tmp_path):
    h = clean()
    h.fault("kill", [2], planned_at=5.0).fault("kill", [1], outcome="skipped", planned_at=9.0)
    a = analyze(spark, h.write(tmp_path / "history"))
    assert a.facts.ops == {"fired": 1, "skipped": 1} and a.facts.chaos_problems == []
    assert verdict(scenario(), a).valid is True

    # a mix line: its kill fired, its pause found its broker held; the line took effect
    mixed = clean()
    mixed.fault("kill", [2], planned_at=5.0).fault(
        "pause", [], outcome="skipped", planned_at=9.0, skipped="held")
    assert analyze(spark, mixed.write(tmp_path / "mixed")).facts.chaos_problems == []


def test_the_share_of_the_plan_counts_late_ops_and_says_why_ops_were_skipped(spark, tmp_path):
    h = clean()
    h.fault("kill", [2], planned_at=5.0, delay_s=0.4).fault(
        "kill", [3], planned_at=25.0, delay_s=14.2)
    h.fault("pause", [], outcome="skipped", line=1, planned_at=9.0,
            skipped="brokers [2] were held by another fault line's op", delay_s=0.0)
    h.fault("pause", [], outcome="skipped", line=1, planned_at=20.0,
            skipped="brokers [3] were held by another fault line's op", delay_s=0.0)
    h.fault("pause", [], outcome="skipped", line=1, planned_at=31.0,
            skipped="no node matched target 'leader'")
    h.fault("pause", [], outcome="not-reached", line=1, planned_at=42.0)
    facts = analyze(spark, h.write(tmp_path / "history")).facts
    assert (facts.ops, facts.late_ops) == ({"fired": 2, "skipped": 3, "not-reached": 1}, 1)
    assert facts.skipped_because == {"brokers held by another line": 2, "no broker matched": 1}
    assert plan_share(facts) == ("2 of 6 planned fault ops fired (3 skipped: brokers held by "
                                 "another line, no broker matched; 1 not-reached), 1 over 2 s late")


def power_loss(target, **topic) -> Scenario:
    raw = {**SAFE, "topic": {**SAFE["topic"], **topic},
           "faults": [{"fault": "power-loss", "target": target, "every": 30, "for": 3}]}
    return validate(raw, "test")


@pytest.mark.parametrize("over", [{"topic__min_insync_replicas": 1},
                                  {"topic__unclean_leader_election": True}])
def test_a_truncating_log_may_tear_a_committed_transaction(over):
    transactional = {"producer__transactional": True, "consumer__isolation": "read_committed"}
    torn = next(r for r in rules(scenario(**transactional, **over))
                if r.anomaly == "torn-transaction")
    assert torn.allowed and torn.why.startswith("a truncated log can lose part of a transaction")
    assert "torn-transaction" not in allowed(scenario(**transactional))


REWRITES = {"lost-write", "inconsistent-offset", "vanished-read", "poll-skip", "nonmonotonic-poll",
            "replica-divergence", "committed-unread"}


@pytest.mark.parametrize("target", ["all", "isr", [1, 2, 3]])
def test_a_power_loss_of_every_replica_without_fsync_allows_what_a_rewritten_log_does(target):
    ok = allowed(power_loss(target))
    assert ok >= REWRITES
    rule = next(r for r in rules(power_loss(target)) if r.anomaly == "lost-write")
    assert ("predicated on at least one replica remaining in sync" in rule.why
            and rule.doc.endswith("#replication"))


@pytest.mark.parametrize("target", ["one", "leader", [1, 2]])
def test_a_power_loss_that_leaves_a_replica_allows_nothing(target):
    assert allowed(power_loss(target)) == {"unseen", "timeout-duplicate", "epoch-duplicate"}


def test_fsync_of_each_write_keeps_the_guarantee_through_any_power_loss():
    assert allowed(power_loss("all", config={"flush.messages": 1})) == {
        "unseen", "timeout-duplicate", "epoch-duplicate"}
    assert not REWRITES & allowed(validate({
        **SAFE, "kafka": {"config": {"log.flush.interval.messages": 1}},
        "faults": [{"fault": "power-loss", "target": "all"}]}, "test"))


def last_replica(version: str) -> Scenario:
    return validate({**SAFE, "kafka": {"version": version},
                     "faults": [{"fault": "last-replica-power-loss", "every": 120, "for": 20}]},
                    "test")


@pytest.mark.parametrize("version", ["3.9.2", "4.0.0"])
def test_the_last_in_sync_replicas_power_loss_may_lose_writes_before_eligible_leaders(version):
    assert allowed(last_replica(version)) >= REWRITES
    rule = next(r for r in rules(last_replica(version)) if r.anomaly == "lost-write")
    assert "no eligible leader replicas (KIP-966, on by default from 4.1)" in rule.why


@pytest.mark.parametrize("version", ["0.10.2.2", "0.11.0.3", "3.9.2"])
def test_followers_of_a_leader_that_lost_power_may_lose_its_writes_but_never_diverge(version):
    old = {**SAFE, "kafka": {"version": version, "metadata": "zookeeper"},
           "producer": {"acks": "all", "idempotence": False}}
    s = validate({**old, "faults": [{"fault": "power-loss-divergence", "every": 120, "for": 20}]},
                 "test")
    assert (allowed(s) >= REWRITES - {"replica-divergence"}
            and "replica-divergence" not in allowed(s))
    rule = next(r for r in rules(s) if r.anomaly == "replica-divergence")
    assert "KIP-101's second scenario" in rule.why and "Leader+Epoch" in rule.doc
    both = validate({**old, "faults": [
        {"fault": "power-loss-divergence", "every": 120, "for": 20},
        {"fault": "power-loss", "target": "all"}]}, "t")
    # every replica losing its unsynced tail may still diverge
    assert "replica-divergence" in allowed(both)


@pytest.mark.parametrize("version", ["4.1.0", "4.3.1"])
def test_the_last_in_sync_replicas_power_loss_loses_nothing_with_eligible_leader_replicas(version):
    assert allowed(last_replica(version)) == {"unseen", "timeout-duplicate", "epoch-duplicate"}
    rule = next(r for r in rules(last_replica(version)) if r.anomaly == "lost-write")
    assert "KIP-966" in rule.why and "Eligible+Leader+Replicas" in rule.doc


def test_unknown_names_the_evidence_that_is_missing():
    s = scenario()
    gaps = verdict(s, analysis(drain_complete=False, replicas=False, unseen=2)).unknown_because
    assert (gaps[0]
            == "no complete drain of partition chaos-0: a value missing there is not proven lost")
    assert gaps[1].startswith("2 acknowledged sends neither read nor provably lost: a loss is "
                              "proven by a complete drain with a replica dump, or by an "
                              "assign-mode reader past the offset")
    assert (gaps[2]
            == "no replica dump: a value no reader saw is not proven absent from every replica")
    txn = analysis(drain_complete=False)
    txn.facts.transactional = True
    assert verdict(s, txn).unknown_because[0].endswith("a poll-skip there is judged only between "
                                                       "records the drain read")
