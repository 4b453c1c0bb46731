"""The headline leads with lost writes whenever there are any, however numerous the other anomalies."""

from __future__ import annotations

from contracts.results import Metrics, RunResult, Span
from kchaos.catalog import catalog, load, validate
from reports.guarantees import rules
from reports.headline import headline


def test_lost_writes_lead_the_headline_even_when_reorders_outnumber_them():
    unsafe = validate({"name": "s", "producer": {"acks": "1", "idempotence": False}}, "test")
    r = RunResult(rules=rules(unsafe), scenario="s", kafka="4.3.1", seed=1, run_dir="r", verdict=True,
                  counts={"lost-write": 2, "nonmonotonic-send": 5}, allowed_seen={"lost-write": 2,
                                                                                   "nonmonotonic-send": 5},
                  metrics=Metrics(acked=100), spans={"lost-write": Span(partitions=[0], first_s=1.0, last_s=2.0)})
    faults = [{"fault": "kill", "start_s": 0.5, "length_s": 3.0, "targets": "3"}]
    assert headline(r, faults)[0].startswith("Lost 2 of 100 acknowledged writes (2.0%) on partition 0, acknowledged "
                                             "at 1.0-2.0 s during kill #1 of broker 3; allowed by acks=1")


def test_a_span_over_several_fault_ops_names_the_first_and_counts_the_rest():
    unsafe = validate({"name": "s", "producer": {"acks": "1", "idempotence": False}}, "test")
    r = RunResult(rules=rules(unsafe), scenario="s", kafka="4.3.1", seed=1, run_dir="r", verdict=True,
                  counts={"lost-write": 7}, allowed_seen={"lost-write": 7}, metrics=Metrics(acked=100),
                  spans={"lost-write": Span(partitions=[0, 1], first_s=10.0, last_s=50.0)})
    kills = ((1, "1"), (12, "2"), (30, "3"))
    faults = [{"fault": "kill", "start_s": s, "length_s": 2.0, "targets": t} for s, t in kills]
    faults += [{"fault": "pause", "start_s": 40.0, "length_s": 4.0, "targets": "2"}]
    assert "at 10.0-50.0 s during kill #2 of broker 2 and 2 more fault ops; allowed" in headline(r, faults)[0]


def test_a_violation_on_the_release_a_known_bug_affects_names_the_bug_and_its_fix():
    affected, fixed = load(catalog()["kip101-hw-truncation"])
    for s, names_it in ((affected, True), (fixed, False)):
        r = RunResult(rules=rules(s), scenario=s.name, kafka=s.kafka.version, seed=1, run_dir="r", verdict=False,
                      known_bug="KIP-101" if names_it else "", counts={"lost-write": 3},
                      forbidden={"lost-write": 3}, metrics=Metrics(acked=90),
                      spans={"lost-write": Span(partitions=[2], first_s=9.0, last_s=9.5)},
                      settings=s.model_dump(mode="json", by_alias=True))
        sentence, doc = headline(r, [])
        assert ("KIP-101 found again (Kafka 0.10.2.2 has it, 0.11.0.3 fixed it); forbidden" in sentence) is names_it
        assert ("KIP-101" in doc) is names_it
