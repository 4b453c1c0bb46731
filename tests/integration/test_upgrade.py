"""A rolling upgrade on real brokers: a KRaft cluster on 3.9.2 rolls to 4.3.1 under load while a
leader is killed, every broker comes back on the new jars with its data, the feature levels are
finalized, and every acknowledged write is read back."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from contracts.scenario import Scenario
from runloop.check import run_and_check

pytestmark = pytest.mark.slow  # make test-all: three broker restarts and a finalize

SCENARIO = {
    "name": "upgrade-it", "kafka": {"version": "3.9.2", "brokers": 3},
    "topic": {"partitions": 3, "replication_factor": 3, "min_insync_replicas": 2},
    "producer": {"count": 2, "acks": "all", "idempotence": True, "rate": 200},
    "consumer": {"count": 2, "mode": "subscribe", "commit": "after"},
    "faults": [{"fault": "upgrade", "to": "4.3.1", "after": "5s", "for": "0s"},
               {"fault": "kill", "target": "leader", "every": "20s", "for": "4s", "after": "8s"}],
    "duration": "240s",
}


def test_a_rolling_upgrade_under_leader_kills_keeps_every_acknowledged_write(tmp_path):
    out = run_and_check(Scenario.model_validate(SCENARIO), tmp_path / "runs")
    r = out.result
    assert r.verdict is True, "\n".join([str(r.forbidden), *r.unknown_because])
    faults = pq.read_table(out.run_dir / "history" / "faults.parquet").to_pylist()
    (up,) = [f for f in faults if f["fault"] == "upgrade"]
    detail = json.loads(up["detail"])
    assert up["outcome"] == "fired", detail
    assert [b["broker"] for b in detail["rolled"]] == [1, 2, 3]
    assert detail["finalized"]["metadata.version"] == "30"  # 4.3-IV0
    assert any(f["fault"] == "kill" and f["outcome"] == "fired" for f in faults)
    logs = out.run_dir / "logs"
    for broker in (1, 2, 3):  # each broker's last start ran the 4.3.1 jars
        text = (logs / f"kafka-{broker}.log").read_text()
        assert text.rfind("Kafka version: 4.3.1") > text.rfind("Kafka version: 3.9.2") > 0
