"""One meaning per badge: a Kafka bug, a harness miss, a known bug found again and an unknown never
share one, and exit codes, results.json and `scenarios list` say the same."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contracts.results import Badge, Durations, RunResult, expectation
from kchaos.catalog import catalog, load, validate
from kchaos.exits import exit_code
from reports.guarantees import allowed
from reports.verdict import verdict
from tests.unit.test_guarantees import analysis

BUG = {"bug": "KAFKA-7128", "link": "https://issues.apache.org/jira/browse/KAFKA-7128",
       "affected": "2.0.0", "fixed": "2.0.1", "shows": ["lost-write"]}
SAFE = {"producer": {"acks": "all", "idempotence": True}, "topic": {"min_insync_replicas": 2}}


def judged(version: str, **counts) -> RunResult:
    """A regression scenario on `version` judged on an analysis with these counts."""
    s = validate({"name": "k", "kafka": {"version": version}, **SAFE, "regression": BUG}, "test")
    v = verdict(s, analysis(**counts))
    return RunResult(scenario=s.name, kafka=version, seed=1, run_dir="r", verdict=v.valid,
                     known_bug=v.known_bug, forbidden=v.forbidden, allowed_seen=v.allowed_seen,
                     missing_expect=v.missing_expect, unknown_because=v.unknown_because)


def result(**fields) -> RunResult:
    return RunResult(**({"scenario": "s", "kafka": "4.3.1", "seed": 1, "run_dir": "r",
                         "verdict": True} | fields))


@pytest.mark.parametrize(("fields", "badge"), [
    ({}, Badge.PASS),
    ({"allowed_seen": {"duplicate": 2}}, Badge.EXPECTED_ANOMALY),
    ({"verdict": False, "forbidden": {"lost-write": 1}}, Badge.FAIL),
    ({"verdict": False, "forbidden": {"lost-write": 1}, "known_bug": "KAFKA-7128"},
     Badge.KNOWN_BUG),
    ({"verdict": False, "forbidden": {"aborted-read": 1}, "caught": True}, Badge.CAUGHT),
    ({"missing_expect": ["lost-write"]}, Badge.NOT_PROVOKED),
    # an unknown run may have hidden it
    ({"verdict": None, "missing_expect": ["lost-write"]}, Badge.UNKNOWN),
    ({"verdict": None}, Badge.UNKNOWN),
    ({"verdict": None, "error": "ClusterError: kafka-2 did not start"}, Badge.UNKNOWN),
    ({"verdict": False, "forbidden": {"lost-write": 1}, "missing_expect": ["duplicate"]},
     Badge.FAIL),
])
def test_each_badge_has_one_meaning(fields, badge):
    assert result(**fields).badge is badge


def test_a_known_bug_is_found_again_only_on_the_release_that_has_it_and_only_by_its_own_anomalies():
    found = judged("2.0.0", lost_write=3)
    assert (found.badge, found.known_bug, found.missing_expect) == (
        Badge.KNOWN_BUG, "KAFKA-7128", [])
    # on the fixed release it is a Kafka bug again
    assert judged("2.0.1", lost_write=3).badge is Badge.FAIL
    other = judged("2.0.0", lost_write=3, aborted_read=1)  # a violation the bug does not explain
    assert (other.badge, other.known_bug) == (Badge.FAIL, "")
    missed = judged("2.0.0")
    assert (missed.badge, missed.missing_expect) == (
        Badge.NOT_PROVOKED, ["lost-write (KAFKA-7128)"])
    assert judged("2.0.1").badge is Badge.PASS


def proof(**counts) -> RunResult:
    """txn-judged-uncommitted, which plants aborted-read, judged on an analysis of these counts."""
    (s,) = load(catalog()["txn-judged-uncommitted"])
    v = verdict(s, analysis(**counts))
    return RunResult(scenario=s.name, kafka="4.4.0", seed=1, run_dir="r", verdict=v.valid,
                     caught=v.caught, forbidden=v.forbidden, missing_expect=v.missing_expect)


def test_a_checkers_proof_is_caught_only_by_the_anomaly_it_plants():
    assert (proof(aborted_read=4).badge, proof(aborted_read=4).verdict) == (Badge.CAUGHT, False)
    # a forbidden anomaly it does not plant is Kafka's
    assert proof(aborted_read=4, lost_write=1).badge is Badge.FAIL
    assert proof(lost_write=1).badge is Badge.FAIL
    missed = proof()
    assert (missed.badge, missed.missing_expect) == (Badge.NOT_PROVOKED, ["aborted-read"])


def test_a_forbidden_anomaly_a_scenario_expects_without_judging_wrongly_is_a_fail():
    """Expecting lost writes under acks=all plants nothing: Kafka losing them is Kafka's bug."""
    s = validate({"name": "k", **SAFE, "expect": ["lost-write"]}, "test")
    assert (s.proof, expectation(s, allowed(s))) == (False, "FAIL (lost-write)")
    v = verdict(s, analysis(lost_write=3))
    assert (v.valid, v.caught) == (False, False)


def test_exit_codes_fail_only_on_fail_and_count_a_harness_miss_like_unknown():
    def code(*badges: dict, allow: bool = False) -> int:
        return exit_code([result(**b) for b in badges], allow)

    bug = {"verdict": False, "forbidden": {"lost-write": 1}, "known_bug": "KAFKA-7128"}
    caught = {"verdict": False, "forbidden": {"aborted-read": 1}, "caught": True}
    # a regressions suite that found its bugs is green, and so is a checker's proof that caught
    assert code({}, {"allowed_seen": {"duplicate": 1}}, bug, caught) == 0
    assert code({"missing_expect": ["lost-write"]}) == 5
    assert code({"missing_expect": ["lost-write"]}, allow=True) == 0
    assert code({"verdict": None}, allow=True) == 0
    assert code({"verdict": False, "forbidden": {"lost-write": 1}}, {"verdict": None},
                allow=True) == 1
    assert code({"verdict": None, "error": "ClusterError: no broker"}, {}) == 4


def test_results_json_says_the_badge_a_boolean_verdict_and_a_relative_run_dir(
        tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run_dir = tmp_path / "runs" / "s" / "1"
    run_dir.mkdir(parents=True)
    result(verdict=False, forbidden={"lost-write": 1}, run_dir=str(run_dir)).save(run_dir)
    saved = json.loads((run_dir / "results.json").read_text())
    assert (saved["schema_version"], saved["verdict"], saved["badge"]) == (3, False, "FAIL")
    assert saved["run_dir"] == "runs/s/1"
    # the badge it wrote is read back
    assert RunResult.load(run_dir / "results.json").badge is Badge.FAIL


def test_durations_made_by_a_run_are_written_and_read_back_unchanged(tmp_path):
    durations = Durations(run_s=61.7, workload_s=45.0, analysis_s=9.3)
    result(durations=durations).save(tmp_path)
    assert RunResult.load(tmp_path / "results.json").durations == durations
    assert (durations.total_s, result(durations=durations).durations) == (71.0, durations)


def test_a_schema_1_results_json_still_reads_with_its_verdict_duration_and_known_bug(tmp_path):
    old = {"schema_version": 1, "scenario": "k[version=2.0.0]", "kafka": "2.0.0", "seed": 42,
           "run_dir": "/elsewhere", "verdict": "false", "failed": True, "elapsed_s": 84.1,
           "forbidden": {"lost-write": 9}, "settings": {"regression": BUG}}
    (tmp_path / "results.json").write_text(json.dumps(old))
    r = RunResult.load(tmp_path / "results.json")
    assert (r.verdict, r.badge, r.known_bug, r.durations) == (False, Badge.KNOWN_BUG, "KAFKA-7128",
                                                             Durations(run_s=84.1))
    # where the file is, not where it was made
    assert (r.run_dir, r.row_name) == (str(tmp_path), "k")
    assert RunResult.model_validate({**old, "verdict": "unknown",
                                     "kafka": "2.0.1"}).badge is Badge.UNKNOWN


def test_a_schema_2_proof_that_found_only_what_it_plants_reads_as_caught():
    old = {"schema_version": 2, "scenario": "txn-judged-uncommitted", "kafka": "4.4.0", "seed": 42,
           "run_dir": "r", "verdict": False, "forbidden": {"aborted-read": 998},
           "allowed": ["unseen"], "settings": {"expect": ["aborted-read"],
                                               "consumer": {"judged_as": "read_committed"}}}
    assert RunResult.model_validate(old).badge is Badge.CAUGHT
    more = {**old, "forbidden": {"aborted-read": 998, "lost-write": 1}}
    assert RunResult.model_validate(more).badge is Badge.FAIL
    allowed_too = {**old, "allowed": ["aborted-read"]}  # expected and allowed: nothing planted
    assert RunResult.model_validate(allowed_too).badge is Badge.FAIL
    # expecting a forbidden anomaly without judging wrongly is no proof
    fair = {**old, "settings": {"expect": ["aborted-read"], "consumer": {}}}
    assert RunResult.model_validate(fair).badge is Badge.FAIL


def test_scenarios_list_shows_the_expected_badge_per_version():
    affected, fixed = load(catalog()["kafka7128-stale-hw-isr-join"])
    assert expectation(affected, allowed(affected)) == "KNOWN BUG KAFKA-7128 (lost-write)"
    assert expectation(fixed, allowed(fixed)) == "PASS"
    (acks1,) = load(catalog()["acks1-leader-kill"])
    assert expectation(acks1, allowed(acks1)) == "EXPECTED ANOMALY (lost-write)"
    # a checker's proof: read_committed forbids what its read_uncommitted readers must return
    (planted,) = load(catalog()["txn-judged-uncommitted"])
    assert expectation(planted, allowed(planted)) == "CAUGHT (aborted-read)"


ONE_OF_EACH = {Badge.PASS: {}, Badge.EXPECTED_ANOMALY: {"allowed_seen": {"duplicate": 2}},
               Badge.CAUGHT: {"verdict": False, "forbidden": {"aborted-read": 1}, "caught": True},
               Badge.KNOWN_BUG: {"verdict": False, "forbidden": {"lost-write": 1},
                                 "known_bug": "KAFKA-7128"},
               Badge.NOT_PROVOKED: {"missing_expect": ["lost-write"]},
               Badge.UNKNOWN: {"verdict": None},
               Badge.FAIL: {"verdict": False, "forbidden": {"lost-write": 1}}}


def test_the_readme_gives_each_badge_its_meaning_and_exit_code():
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    for badge, fields in ONE_OF_EACH.items():
        assert result(**fields).badge is badge
        assert f"| {badge} | {badge.meaning} | {exit_code([result(**fields)])} |" in readme
