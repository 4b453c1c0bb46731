"""The Java kafka-clients worker on real brokers: its producers, transactional producers and
consumers write the same history as the Python clients, a killed member restarts, and the history
passes the analyzer (a reader misjudged on it is caught)."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from contracts.history import Event
from kchaos.catalog import expand
from runloop.check import check, run_and_check

TRANSACTIONS = {
    "name": "java-txn", "duration": "20s", "seed": 3,
    "topic": {"partitions": 3, "replication_factor": 3, "min_insync_replicas": 2},
    "producer": {"count": 2, "transactional": True, "txn_sends": 5, "abort_ratio": 0.3,
                 "rate": 200, "client": "java"},
    "consumer": {"count": 2, "isolation": "both", "client": "java"},
    "faults": [{"fault": "consumer-kill", "target": 0, "after": "5s", "every": "30s",
                "for": "3s"}],
}
PLAIN = {
    "name": "java-plain", "duration": "25s", "seed": 3,
    "topic": {"partitions": 3, "replication_factor": 3, "min_insync_replicas": 2},
    "producer": {"count": 2, "rate": 300, "keyed": True, "client": "java"},
    "consumer": {"count": 2, "mode": "assign", "client": "java"},
    "faults": [{"fault": "kill", "target": "leader", "after": "5s", "every": "30s", "for": "4s"}],
}


def rows(run_dir, table: str) -> list[dict]:
    return pq.read_table(run_dir / "history" / f"{table}.parquet").to_pylist()


def test_java_transactions_and_a_killed_group_member_pass_and_a_misjudged_reader_is_caught(
        tmp_path):
    (scenario,) = expand(TRANSACTIONS, "test")
    out = run_and_check(scenario, tmp_path / "runs")
    r = out.result
    assert r.verdict is True, "\n".join([str(r.forbidden), *r.unknown_because])
    assert r.client.library == r.consumer_client.library == "java kafka-clients"
    assert r.facts.ops == {"fired": 1} and r.facts.group_commits == "known"
    fates = [t["fate"] for t in rows(out.run_dir, "txns")]
    assert fates.count("committed") > 10 and fates.count("aborted") > 2, fates
    protocols = {(e["source"], e["detail"]) for e in rows(out.run_dir, "events")
                 if e["kind"] == Event.TXN_PROTOCOL}
    # Kafka 4.0+ enables transactions v2, and kafka-clients 4.0+ speak it
    assert protocols == {("producer-0", "v2"), ("producer-1", "v2")}, protocols
    assert r.facts.txn_protocols == ["v2"]
    # the killed member came back as a new JVM, and both members read
    assert (out.run_dir / "logs" / "consumer-0-1.java.log").exists()
    assert {x["reader"] for x in rows(out.run_dir, "reads")} >= {"consumer-0", "consumer-1"}

    # its read_uncommitted reader held to read_committed: the aborted values it read are caught
    judged = scenario.model_copy(update={"consumer": scenario.consumer.model_copy(
        update={"judged_as": "read_committed"})})
    again = check(judged, out.run_dir).result
    assert again.verdict is False and again.forbidden.get("aborted-read", 0) > 0, again.counts


@pytest.mark.slow  # make test-all: the transactional run above covers the worker in the CI tier
def test_java_producers_and_assign_readers_pass_through_a_leader_kill(tmp_path):
    (scenario,) = expand(PLAIN, "test")
    out = run_and_check(scenario, tmp_path / "runs")
    r = out.result
    assert r.verdict is True, "\n".join([str(r.forbidden), *r.unknown_because])
    sends = rows(out.run_dir, "sends")
    assert sum(s["outcome"] == "ok" for s in sends) > 5000
    assert {s["key"] for s in sends if s["producer"] == 1} == {f"1-{k}" for k in range(16)}
    assert r.counts["lost-write"] == r.counts["duplicate"] == 0
