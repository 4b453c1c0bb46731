"""A share group (KIP-932) on real brokers: members are killed, the records they held are delivered
again to the others, and the run passes, on librdkafka's share consumer and on kafka-clients'."""

from __future__ import annotations

from collections import Counter

import pyarrow.parquet as pq
import pytest

from contracts.history import Event
from contracts.scenario import Scenario
from runloop.check import run_and_check

SCENARIO = {
    "name": "share-kill-it", "kafka": {"brokers": 3},
    "topic": {"partitions": 3, "replication_factor": 3, "min_insync_replicas": 2},
    "producer": {"count": 2, "rate": 200}, "workload": "share",
    # every record is accepted, so each second delivery is a killed member's record coming back.
    # Each kill takes two members (the schedule counts from their first records); each holds a
    # poll's records far longer than it takes to commit them, for a time drawn per poll
    "share": {"count": 3, "release": 0, "reject": 0, "process_ms": 2000, "lock_ms": 6000},
    "faults": [{"fault": "consumer-kill", "target": "majority", "every": "7s", "for": "3s",
                "after": "3s"}],
    "duration": "24s",
}


def _timeline(history) -> str:
    """When each member (and the final one) was first handed records, how many, when each kill
    fired and which members were replaced, in seconds from the first send: what a failure needs to
    say."""
    t0 = min(r["t_invoke"] for r in pq.read_table(history / "sends.parquet").to_pylist())
    first: dict[str, int] = {}
    handed = Counter()
    for r in pq.read_table(history / "shares.parquet").to_pylist():
        first[r["reader"]] = min(first.get(r["reader"], r["t"]), r["t"])
        handed[r["reader"]] += 1
    kills = [f["t_start"] for f in pq.read_table(history / "faults.parquet").to_pylist()
             if f["fault"] == "consumer-kill"]
    replaced = [(e["source"], round((e["t"] - t0) / 1e9, 1))
                for e in pq.read_table(history / "events.parquet").to_pylist()
                if e["kind"] == Event.RECREATED]
    at = {k: (round((v - t0) / 1e9, 1), handed[k]) for k, v in sorted(first.items())}
    return (f"first records (s, records) {at}, kills at "
            f"{[round((t - t0) / 1e9, 1) for t in kills]}, replaced {replaced}")


@pytest.mark.parametrize("client", ["librdkafka", pytest.param("java", marks=pytest.mark.slow)])
def test_a_killed_members_records_are_delivered_again_and_the_run_passes(tmp_path, client):
    scenario = Scenario.model_validate(SCENARIO | {"share": SCENARIO["share"] | {"client": client}})
    out = run_and_check(scenario, tmp_path / "runs")
    r = out.result
    history = out.run_dir / "history"
    assert r.verdict is True, "\n".join([str(r.forbidden), *r.unknown_because, _timeline(history)])
    assert r.consumer_client.library == ("java kafka-clients" if client == "java" else "librdkafka")
    assert r.facts.ops == {"fired": 3}, r.facts.ops
    shares = pq.read_table(history / "shares.parquet").to_pylist()
    # no record was released: a second delivery is a killed member's record come back
    again = {(s["partition"], s["offset"]) for s in shares if s["delivery"] >= 2}
    assert again, _timeline(history)
    assert {s["ack"] for s in shares} == {"accept"}
    events = pq.read_table(history / "events.parquet").to_pylist()
    states = [e for e in events if e["kind"] == Event.SHARE_START]
    assert sorted(e["partition"] for e in states) == [0, 1, 2]
    assert len(shares) >= sum(1 for _ in pq.read_table(history / "sends.parquet").to_pylist())
