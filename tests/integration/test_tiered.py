"""Tiered storage on real brokers: segments upload to the shared remote tier and leave the local
one, the final read fetches them from the remote tier, and every acknowledged write is checked
there like anywhere else."""

from __future__ import annotations

import pyarrow.parquet as pq

from contracts.history import Event
from contracts.results import Badge
from kchaos.catalog import catalog, load
from runloop.check import run_and_check


def test_reads_served_by_the_remote_tier_through_leader_kills_pass(tmp_path):
    (scenario,) = load(catalog()["tiered-leader-kill"])
    out = run_and_check(scenario, tmp_path / "runs")
    r = out.result
    assert r.badge is Badge.PASS, "\n".join([str(r.counts), *r.unknown_because])
    history = out.run_dir / "history"
    events = pq.read_table(history / "events.parquet").to_pylist()
    uploaded = {(e["partition"], e["offset"]) for e in events
                if e["kind"] == Event.REMOTE_UPLOADED}
    assert {p for p, _ in uploaded} == {0, 1, 2} and len(uploaded) >= 9
    # no replica kept a partition's first segment locally, yet the final read returned its records:
    # the remote tier served them
    replicas = pq.read_table(history / "replicas.parquet", columns=["partition", "offset"])
    first_local = {}
    for row in replicas.to_pylist():
        first_local[row["partition"]] = min(first_local.get(row["partition"], 1 << 62),
                                            row["offset"])
    drained = pq.read_table(history / "reads.parquet", columns=["reader", "partition", "offset"])
    from_zero = {row["partition"] for row in drained.to_pylist()
                 if row["reader"] == "drain" and row["offset"] == 0}
    assert from_zero == {0, 1, 2} and all(first_local[p] > 0 for p in range(3)), first_local
