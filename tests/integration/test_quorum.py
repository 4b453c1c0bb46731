"""KIP-853 on real brokers: a dynamic quorum of four combined nodes swaps a controller in and the
active one out under load, the one removed killed meanwhile, and every acknowledged write is read
back."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from contracts.scenario import Scenario
from runloop.check import run_and_check

pytestmark = pytest.mark.slow  # make test-all: four nodes, each formatted by its own JVM

SCENARIO = {
    "name": "quorum-it", "kafka": {"brokers": 4},
    "topic": {"partitions": 3, "replication_factor": 3, "min_insync_replicas": 2},
    "producer": {"count": 2, "acks": "all", "idempotence": True, "rate": 200},
    "consumer": {"count": 2, "mode": "subscribe", "commit": "after"},
    "faults": [{"fault": "quorum-swap", "disrupt": "kill-removed", "every": "35s", "for": "4s",
                "after": "5s"}],
    "duration": "75s",
}


def test_a_controller_swapped_in_and_the_active_one_out_keeps_every_acknowledged_write(tmp_path):
    out = run_and_check(Scenario.model_validate(SCENARIO), tmp_path / "runs")
    r = out.result
    assert r.verdict is True, "\n".join([str(r.forbidden), *r.unknown_because])
    faults = pq.read_table(out.run_dir / "history" / "faults.parquet").to_pylist()
    swaps = [json.loads(f["detail"]) for f in faults if f["fault"] == "quorum-swap"]
    assert [f["outcome"] for f in faults if f["fault"] == "quorum-swap"] == ["fired", "fired"]
    first, second = swaps
    assert (first["voters_before"], first["added"]) == ([1, 2, 3], 4)
    assert first["voters_after"] == sorted({1, 2, 3, 4} - {first["removed"]})
    # the controller the first op removed observes, and the second op adds it back
    assert second["added"] == first["removed"]
    assert first["steps"]["remove"]["disrupted"] == "kill-removed"
