"""Workloads against real brokers: the history agrees with Kafka's own offsets and survives a
SIGKILL."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from confluent_kafka import Producer

from contracts.history import CLIENT_TROUBLE, HistoryWriter, read_jsonl
from contracts.scenario import ConsumerSpec, ProducerSpec
from harness.broker_config import ClusterSpec
from harness.cluster import Cluster
from reports.analysis import analyze
from workloads import drain
from workloads.consumer import ConsumerClient
from workloads.drain import final_drain
from workloads.producer import ProducerClient

TOPIC = "chaos"
# On a loaded machine a broker may take longer than the default message timeout to serve a
# partition; this test checks the history against Kafka's offsets, not latency, so it waits out a
# slow broker
SLOW_BROKER_MS = 120_000
# sends in 5 s at 5 x 200 a second: a workload thread short of CPU falls behind, never ahead
ENOUGH = 1500
LOG_WORTH = re.compile(rf"(Leader|Follower) {TOPIC}-\d starts|ISR from|fenced|ERROR|WARN")


@pytest.fixture(scope="module")
def kraft():
    with Cluster(ClusterSpec()) as c:
        yield c


def _why_not_ok(sends: pd.DataFrame, events: pd.DataFrame, cluster: Cluster) -> str:
    """What a failed healthy run needs to be told apart: each partition's outcomes with when they
    were sent and how long they took, the producers' request counters, and the brokers' log lines on
    ISR changes and errors."""
    at = (sends.t_invoke - sends.t_invoke.min()) / 1e9
    s = sends.assign(at_s=at, took_s=(sends.t_complete - sends.t_invoke) / 1e9,
                     error=sends.error.fillna("-"))
    table = s.groupby(["partition", "outcome", "error"]).agg(
        n=("seq", "size"), first_s=("at_s", "min"), last_s=("at_s", "max"),
        max_took_s=("took_s", "max"))
    requests = events[events.kind == "requests"].groupby("source").detail.last().to_dict()
    logs = {n.node_id: [line for line in n.log_text().splitlines() if LOG_WORTH.search(line)][-8:]
            for n in cluster.nodes}
    return f"{table.round(1).to_string()}\nrequests: {requests}\nbroker logs: {logs}"


def _replicas_hold_the_acks(history: Path, ok: pd.DataFrame) -> None:
    """Every replica's segment files against the acks, and Kafka's producer fields."""
    # every replica's segment files hold each acked value at its acked offset; each batch carries
    # its leader's epoch, the same on every replica and never falling along a partition (a loaded
    # machine may move a leader even here)
    replicas = pq.read_table(history / "replicas.parquet").to_pandas()
    acked = set(zip(ok.partition, ok.offset, ok.producer, ok.seq, strict=True))
    for broker in (1, 2, 3):
        r = replicas[replicas.broker == broker]
        assert set(zip(r.partition, r.offset, r.producer, r.seq,
                       strict=True)) == acked and len(r) == len(ok)
    assert replicas.checksum_ok.all() and replicas.leader_epoch.min() == 0
    assert (replicas.groupby(["partition", "offset"]).leader_epoch.nunique() == 1).all()
    assert replicas.sort_values("offset").groupby(["broker", "partition"]).leader_epoch.apply(
        lambda e: e.is_monotonic_increasing).all()
    # Kafka's producer fields: one producer id per (idempotent) client, its sequences 0, 1, ... per
    # partition
    assert (replicas.groupby("producer").producer_id.nunique() == 1).all()
    assert replicas.producer_id.nunique() == 5 and (replicas.producer_epoch == 0).all()
    assert not replicas.transactional.any()
    for _, seqs in replicas[replicas.broker == 1].groupby(["producer_id", "partition"]).sequence:
        assert sorted(seqs) == list(range(len(seqs)))


def test_healthy_cluster_every_ok_send_read_exactly_once_and_counts_match_end_offsets(
        kraft, tmp_path):
    kraft.metadata.create_topic(TOPIC, 3, 3, {"min.insync.replicas": "2"})
    h = HistoryWriter(tmp_path / "history")
    boot = kraft.bootstrap_servers()
    consumer = ConsumerClient(0, ConsumerSpec(), (TOPIC,), 3, boot, h).start()
    producers = [ProducerClient(i, ProducerSpec(rate=200, compression=codec, keyed=i == 0,
                                                message_timeout_ms=SLOW_BROKER_MS), TOPIC, boot, h)
                 .start()
                 for i, codec in enumerate(("none", "gzip", "snappy", "lz4", "zstd"))]
    time.sleep(5)
    for p in producers:
        p.stop()
    for p in producers:
        p.join(SLOW_BROKER_MS / 1000 + 30)
    time.sleep(2)
    consumer.stop()
    consumer.join(30)
    reached = final_drain(boot, TOPIC, 3, h)
    kraft.dump_replica_logs(TOPIC, lambda lines: h.write_lines("replicas", lines))
    h.close()
    assert all(reached.values())
    sends = pq.read_table(tmp_path / "history" / "sends.parquet").to_pandas()
    reads = pq.read_table(tmp_path / "history" / "reads.parquet").to_pandas()
    events = pq.read_table(tmp_path / "history" / "events.parquet").to_pandas()
    ok = sends[sends.outcome == "ok"]
    trouble = events[events.kind.isin([k.value for k in CLIENT_TROUBLE])][[
        "source", "kind", "detail"]]
    assert len(ok) == len(sends) > ENOUGH, (f"{_why_not_ok(sends, events, kraft)}\ntrouble: "
                                            f"{trouble.drop_duplicates().head(10).to_dict('records')}")
    final = reads[reads.phase == "final"]
    assert len(final) == len(ok)  # exactly once: no more, no fewer rows than acks
    assert set(zip(final.producer, final.seq, strict=True)) == set(zip(
        ok.producer, ok.seq, strict=True))
    ends = events[events.kind == "final-end"].set_index("partition")["offset"].to_dict()
    assert sum(ends.values()) == len(ok)  # Kafka's end offsets agree with our acks
    assert ok.groupby("partition").size().to_dict() == ends
    assert set(events.kind) >= {"assign", "final-end"}
    # the partitioner runs per message in a batch: one partition per key
    keyed = ok[ok.producer == 0]
    assert keyed.key.nunique() == 16 and (keyed.groupby("key").partition.nunique() == 1).all()
    assert keyed.partition.nunique() > 1
    _replicas_hold_the_acks(tmp_path / "history", ok)


def test_drain_reads_what_lands_while_its_ends_settle(kraft, tmp_path, monkeypatch):
    kraft.metadata.create_topic("moving", 3, 3)
    producer = Producer({"bootstrap.servers": kraft.bootstrap_servers(), "acks": "all",
                         "log_level": 0})

    def write(n: int) -> None:
        for i in range(n):
            producer.produce("moving", b"%d" % i, partition=i % 3)
        assert producer.flush(30) == 0

    settles: list[float] = []

    # the first settle finds 300 more records behind the ends it read to
    def settle(seconds: float) -> None:
        if seconds == drain.SETTLE_S:  # not a retry's pause
            if not settles:
                write(300)
            settles.append(seconds)
        time.sleep(seconds)

    write(300)
    clock = {"sleep": staticmethod(settle), "monotonic": staticmethod(time.monotonic)}
    monkeypatch.setattr(drain, "time", type("Clock", (), clock))
    h = HistoryWriter(tmp_path / "history")
    reached = final_drain(kraft.bootstrap_servers(), "moving", 3, h)
    h.close()
    assert all(reached.values()) and len(settles) == 2
    reads = pq.read_table(tmp_path / "history" / "reads.parquet").to_pandas()
    events = pq.read_table(tmp_path / "history" / "events.parquet").to_pandas()
    assert len(reads) == 600 and reads.groupby("partition").offset.max().to_dict() == {
        0: 199, 1: 199, 2: 199}
    assert events[events.kind == "final-end"].offset.tolist() == [200, 200, 200]


def test_sends_with_the_cluster_stopped_end_info_or_fail_never_ok(kraft, tmp_path):
    kraft.metadata.create_topic("down", 1, 3, {"min.insync.replicas": "2"})
    h = HistoryWriter(tmp_path / "history")
    for n in kraft.nodes:
        n.kill()
    try:
        p = ProducerClient(0,
                           ProducerSpec(rate=50, message_timeout_ms=3000, request_timeout_ms=1000),
                           "down", kraft.bootstrap_servers(), h).start()
        time.sleep(3)
        p.stop()
        p.join(30)
    finally:
        kraft.start_nodes(kraft.node_ids())
    h.close()
    sends = pq.read_table(tmp_path / "history" / "sends.parquet").to_pandas()
    assert len(sends) > 50
    assert set(sends.outcome) <= {"info", "fail"}


WORKLOAD = """
import sys, time
from pathlib import Path
from contracts.history import HistoryWriter
from contracts.scenario import ProducerSpec
from workloads.producer import ProducerClient
h = HistoryWriter(Path(sys.argv[1]))
ProducerClient(0, ProducerSpec(rate=500), "{topic}", "{boot}", h).start()
print("started", flush=True)
time.sleep(600)
"""


def test_sigkilled_workload_leaves_a_readable_analyzable_history(kraft, tmp_path, spark):
    kraft.metadata.create_topic("killed", 1, 3, {"min.insync.replicas": "2"})
    d = tmp_path / "history"
    proc = subprocess.Popen([sys.executable, "-c",
                             WORKLOAD.format(topic="killed", boot=kraft.bootstrap_servers()),
                             str(d)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "started"
    time.sleep(4)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert read_jsonl(Path(d), "sends").num_rows > 500
    a = analyze(spark, d)
    assert not a.facts.drain_ran
    assert a.metrics["acked"] > 500
