"""Transactions on real brokers: transactional producers commit and abort across partitions while a leader dies;
read_committed readers see no aborted value, and the same readers judged wrongly are caught."""

from __future__ import annotations

import pyarrow.parquet as pq

from kchaos.catalog import expand
from kchaos.pipeline import check, run_and_check

SCENARIO = {
    "name": "txn-short", "duration": "25s", "seed": 5,
    "topic": {"partitions": 3, "replication_factor": 3, "min_insync_replicas": 2},
    "producer": {"count": 2, "transactional": True, "txn_sends": 5, "abort_ratio": 0.3, "rate": 200},
    "consumer": {"count": 2, "mode": "assign", "isolation": "both"},
    "faults": [{"fault": "kill", "target": "leader", "after": "5s", "every": "30s", "for": "4s"}],
}


def test_transactions_through_a_leader_kill_pass_and_a_misjudged_reader_is_caught(tmp_path):
    (scenario,) = expand(SCENARIO, "test")
    out = run_and_check(scenario, tmp_path / "runs")
    txns = pq.read_table(out.run_dir / "history" / "txns.parquet").to_pylist()
    fates = {f: sum(t["fate"] == f for t in txns) for f in ("committed", "aborted")}
    assert fates["committed"] > 100 and fates["aborted"] > 30, fates
    r = out.result
    assert r.facts.transactional and r.facts.ops == {"fired": 1}
    assert r.verdict == "true", (r.forbidden, r.unknown_because)
    assert r.counts["aborted-read"] == r.counts["poll-skip"] == r.counts["torn-transaction"] == 0

    # The same history, its read_uncommitted reader held to read_committed: the aborted values it read are caught.
    judged = scenario.model_copy(update={"consumer": scenario.consumer.model_copy(
        update={"judged_as": "read_committed"})})
    again = check(judged, out.run_dir).result
    assert again.verdict == "false" and again.forbidden.get("aborted-read", 0) > 0, again.counts
