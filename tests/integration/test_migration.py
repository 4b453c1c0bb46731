"""KIP-866's migration on real brokers: a ZooKeeper-mode cluster on 3.9.2 moves to KRaft under
load while a leader is killed, the controllers copy the metadata, every broker ends in KRaft mode
with its data and the metadata it had, and every acknowledged write is read back."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from contracts.scenario import Scenario
from runloop.check import run_and_check

pytestmark = pytest.mark.slow  # make test-all: three controllers and nine node restarts

SCENARIO = {
    "name": "migrate-it", "kafka": {"version": "3.9.2", "brokers": 3, "metadata": "zookeeper"},
    "topic": {"partitions": 3, "replication_factor": 3, "min_insync_replicas": 2},
    "producer": {"count": 2, "acks": "all", "idempotence": True, "rate": 200},
    "consumer": {"count": 2, "mode": "subscribe", "commit": "after"},
    "faults": [{"fault": "migrate", "after": "5s", "for": "0s"},
               {"fault": "kill", "target": "leader", "every": "30s", "for": "4s", "after": "10s"}],
    "duration": "300s",
}


def test_a_migration_under_leader_kills_keeps_every_acknowledged_write(tmp_path):
    out = run_and_check(Scenario.model_validate(SCENARIO), tmp_path / "runs")
    r = out.result
    assert r.verdict is True, "\n".join([str(r.forbidden), *r.unknown_because])
    faults = pq.read_table(out.run_dir / "history" / "faults.parquet").to_pylist()
    (move,) = [f for f in faults if f["fault"] == "migrate"]
    detail = json.loads(move["detail"])
    assert move["outcome"] == "fired", detail
    assert detail["dual-write"] == detail["kraft"] == [1, 2, 3]
    assert detail["controller"] == [3001, 3002, 3003]
    # the metadata it read before and after: the topic with its own config, the planted SCRAM user
    before = detail["inventory"]["before"]
    assert {"topic chaos: partitions=3", "topic chaos: min.insync.replicas=2",
            "user kchaos-witness: SCRAM_SHA_256 iterations=8192"} <= set(before), before
    assert r.counts["metadata-lost"] == 0, detail["inventory"]
    assert any(f["fault"] == "kill" and f["outcome"] == "fired" for f in faults)
    logs = out.run_dir / "logs"
    for broker in (1, 2, 3):  # each broker's last start was in KRaft mode
        text = (logs / f"kafka-{broker}.log").read_text()
        assert text.rfind("KafkaRaftServer") > text.rfind("[KafkaServer id=") > 0
    assert "Completed migration of metadata from ZooKeeper to KRaft" in "".join(
        (logs / f"controller-{c}.log").read_text() for c in (3001, 3002, 3003))
