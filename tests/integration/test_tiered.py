"""Tiered storage on real brokers: segments upload to the shared remote tier and leave the local
one, the final read fetches them from the remote tier, and every acknowledged write is checked
there like anywhere else."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from contracts.history import Event
from harness import labels, lazydisk, remote_tier
from kchaos.catalog import catalog, load
from runloop.check import run_and_check


@pytest.mark.slow  # make test-all: the CI tier's time went to the share group's run
def test_reads_served_by_the_remote_tier_through_leader_kills_pass(tmp_path):
    (scenario,) = load(catalog()["tiered-leader-kill"])
    out = run_and_check(scenario, tmp_path / "runs")
    r = out.result
    # allowed anomalies may show (librdkafka's timeout duplicates); nothing forbidden may
    assert r.verdict is True, "\n".join([str(r.forbidden), *r.unknown_because])
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


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting FUSE with mount(2) needs root")
def test_the_shared_tier_on_lazyfs_refuses_writes_when_full_and_a_dead_runs_mount_is_released():
    tier = remote_tier.SharedTier("tiertest01", lazydisk.binary()).start()
    try:
        (tier.mounted / "a.log").write_bytes(b"x" * 10)
        assert (tier.backing / "a.log").read_bytes() == b"x" * 10
        tier.lazyfs("full")
        with pytest.raises(OSError) as refused, open(tier.mounted / "b.log", "wb") as f:
            f.write(b"y")
            f.flush()
            os.fsync(f.fileno())
        assert refused.value.errno == errno.ENOSPC
        assert tier.lazyfs("heal")["faults"]["refused"] >= 1
        # as the watchdog or `kchaos clean` find a run that died: its mount and directory go
        labels.clean("tiertest01")
        assert str(tier.root) not in Path("/proc/mounts").read_text()
        assert not tier.root.exists()
    finally:
        tier.stop()


@pytest.mark.slow  # make test-all
def test_remote_tier_faults_through_leader_kills_lose_nothing(tmp_path):
    (scenario,) = load(catalog()["tiered-remote-faults"])
    r = run_and_check(scenario, tmp_path / "runs").result
    assert r.verdict is True, "\n".join([str(r.forbidden), *r.unknown_because])
    assert r.facts.ops == {"fired": 6}, r.facts.ops
