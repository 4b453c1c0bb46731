"""The headline leads with lost writes whenever there are any, however numerous the other
anomalies."""

from __future__ import annotations

from contracts.anomalies import ANOMALIES, KINDS
from contracts.results import Facts, Metrics, RunResult, ShareDeliveries, Span
from kchaos.catalog import catalog, load, validate
from reports.guarantees import rules
from reports.headline import WORDS, headline, rule


def test_lost_writes_lead_the_headline_even_when_reorders_outnumber_them():
    unsafe = validate({"name": "s", "producer": {"acks": "1", "idempotence": False}}, "test")
    r = RunResult(rules=rules(unsafe), scenario="s", kafka="4.3.1", seed=1, run_dir="r",
                  verdict=True,
                  counts={"lost-write": 2, "nonmonotonic-send": 5},
                  allowed_seen={"lost-write": 2, "nonmonotonic-send": 5},
                  metrics=Metrics(acked=100),
                  spans={"lost-write": Span(partitions=[0], first_s=1.0, last_s=2.0)})
    faults = [{"fault": "kill", "start_s": 0.5, "length_s": 3.0, "targets": "3"}]
    assert headline(r, faults)[0] == ("Lost 2 of 100 acknowledged writes (2.0%) on partition 0 at "
                                      "1.0-2.0 s, during kill #1 of broker 3; allowed.")
    assert rule(r).startswith("lost-write is allowed here: acks=1")


def test_a_span_over_several_fault_ops_names_the_first_and_counts_the_rest():
    unsafe = validate({"name": "s", "producer": {"acks": "1", "idempotence": False}}, "test")
    r = RunResult(rules=rules(unsafe), scenario="s", kafka="4.3.1", seed=1, run_dir="r",
                  verdict=True, counts={"lost-write": 7}, allowed_seen={"lost-write": 7},
                  metrics=Metrics(acked=100),
                  spans={"lost-write": Span(partitions=[0, 1], first_s=10.0, last_s=50.0)})
    kills = ((1, "1"), (12, "2"), (30, "3"))
    faults = [{"fault": "kill", "start_s": s, "length_s": 2.0, "targets": t} for s, t in kills]
    faults += [{"fault": "pause", "start_s": 40.0, "length_s": 4.0, "targets": "2"}]
    said = headline(r, faults)[0]
    assert "on 2 partitions at 10.0-50.0 s, during kill #2 of broker 2 (+2 more ops); allowed." \
        in said


def test_a_violation_on_the_release_a_known_bug_affects_names_the_bug_and_its_fix():
    affected, fixed = load(catalog()["kip101-hw-truncation"])
    for s, names_it in ((affected, True), (fixed, False)):
        r = RunResult(rules=rules(s), scenario=s.name, kafka=s.kafka.version, seed=1, run_dir="r",
                      verdict=False, known_bug="KIP-101" if names_it else "",
                      counts={"lost-write": 3}, forbidden={"lost-write": 3},
                      metrics=Metrics(acked=90),
                      spans={"lost-write": Span(partitions=[2], first_s=9.0, last_s=9.5)},
                      settings=s.model_dump(mode="json", by_alias=True))
        sentence, doc = headline(r, [])
        said = "KIP-101 found again (Kafka 0.10.2.2 has it, 0.11.0.3 fixed it)." in sentence
        assert said is names_it
        assert ("KIP-101" in doc) is names_it


def test_no_headline_runs_past_30_words_whatever_the_anomaly_span_faults_and_plan():
    """Every anomaly's phrase at its longest: six-figure counts, several partitions, a span over
    many fault ops, a composite op that names no broker, a late op; and the longest reasons for
    unknown and missing expectations."""
    s = validate({"name": "s"}, "test")
    faults = [{"fault": "last-replica-power-loss", "start_s": 1.0, "length_s": 9.0, "targets": ""},
              *({"fault": "kill", "start_s": t, "length_s": 2.0, "targets": "3"}
                for t in (3.0, 5.0))]
    facts = Facts(drain_ran=True, drain_complete=True, partitions_not_drained=[],
                  replicas_dumped=True, recovered=True, assign_readers=[],
                  ops={"fired": 8, "skipped": 4, "not-reached": 1}, late_ops=2)
    spans = {name: Span(partitions=[0, 1, 2], first_s=1.5, last_s=123.4) for name in ANOMALIES}
    base = {"rules": rules(s), "scenario": "s", "kafka": "4.3.1", "seed": 1, "run_dir": "r",
            "facts": facts, "metrics": Metrics(acked=1_234_567), "spans": spans}
    results = [RunResult(**base, verdict=False, counts={name: 123_456}, forbidden={name: 123_456},
                         caught=caught) for name in ANOMALIES for caught in (False, True)]
    results += [RunResult(**base, verdict=True, counts={name: 123_456},
                          allowed_seen={name: 123_456})
                for name in ANOMALIES]
    results += [RunResult(**base, verdict=None, unknown_because=[u, "x", "y"]) for u in (
        "no complete drain of partition chaos-0, chaos-1, chaos-2, chaos-3, chaos-4, chaos-5: a "
        "value missing there",
        "the chaos did not happen as planned: fault line 3 (pause) never took effect: 2 skipped")]
    results.append(RunResult(**base, verdict=None, unknown_because=["x"],
                             liveness="migrate: broker 2 into dual-write, then no full ISR " * 3))
    results.append(RunResult(**base, verdict=True,
                             missing_expect=["lost-write", "duplicate", "nonmonotonic-send"]))
    shared = Metrics(acked=1_234_567, share=ShareDeliveries(deliveries=1_234_567, records=1_234_567,
                                                           again=123_456, released=123_455))
    results.append(RunResult(**(base | {"metrics": shared}), verdict=True))
    results.append(RunResult(**base, verdict=None, error="ClusterError: kafka-2 did not start "
                                                         "within 90s; its log ends with a very "
                                                         "long Java stack trace of forty frames "
                                                         "and more " * 3))
    long = [(len(headline(r, faults)[0].split()), headline(r, faults)[0]) for r in results]
    assert max(long)[0] <= WORDS, max(long)


def test_a_count_of_one_reads_in_the_singular_for_every_anomaly():
    said = {k.name: k.counted(1) for k in KINDS}
    assert said["lost-write"] == "1 acknowledged write lost"
    assert said["nonmonotonic-poll"] == "1 consumer poll that went back"
    assert said["committed-unread"] == "1 record below committed offsets no member read"
    assert all(k.counted(2).startswith("2 ") and k.counted(1) != f"1 {k.phrase}" for k in KINDS)
    assert KINDS[0].counted(31_350) == "31,350 acknowledged writes lost"


def test_an_unknown_run_whose_cluster_stalled_leads_with_the_liveness_finding():
    """A migration Kafka wedged reads as the cluster's stall, not as the drain it left undone."""
    s = validate({"name": "s"}, "test")
    stalled = ("migrate: broker 2 into dual-write, then no full ISR on chaos: Timed out after 180s "
               "waiting for a full ISR on every partition of chaos (last seen: False); full ISR "
               "not restored within 120s: Timed out after 120s")
    r = RunResult(rules=rules(s), scenario="s", kafka="3.9.2", seed=43, run_dir="r", verdict=None,
                  unknown_because=["no complete drain of partition chaos-0: a value missing",
                                   "the chaos did not happen as planned: migrate had no effect"],
                  liveness=stalled)
    assert headline(r, [])[0] == ("Unknown, as the cluster stalled: migrate: broker 2 into "
                                  "dual-write, then no full ISR on chaos: Timed out after 180s "
                                  "waiting ….")
    assert headline(r.model_copy(update={"liveness": ""}), [])[0] == (
        "Unknown: no complete drain of partition chaos-0 (and 1 more reasons).")
