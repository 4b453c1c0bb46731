"""Metrics of a hand-built history with known latencies and one outage: exact percentiles, windows
and series."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from contracts.history import Event, RemoteSegment
from reports.analysis import analyze
from tests.histories import History
from workloads.producer import RequestStats
from workloads.sampler import MemorySampler, TierSampler

MS = 1_000_000


def test_latency_percentiles_unavailability_and_per_second_series(spark, tmp_path):
    # 100 acks 10 ms apart with latencies 1..100 ms (the last 100.456 ms), all completed by 1.09 s;
    # then nothing but a failed send at 4.0 s: no ack from 1.1 s to 4.0 s.
    h = History()
    for i in range(100):
        h.send(0, i, 0, i, took_ns=100_456_000 if i == 99 else (i + 1) * MS)
    h.t += 3_000 * MS
    h.send(0, 100, 0, -1, outcome="fail")
    a = analyze(spark, h.write(tmp_path / "history"))
    m = a.metrics
    assert (m["acked"], m["failed"], m["indeterminate"]) == (100, 1, 0)
    assert m["latency_ms"] == {"p50": 50.0, "p95": 95.0, "p99": 99.0, "max": 100.46}
    assert m["unavailability"] == [{"start_s": 1.1, "length_s": 2.9}] and m["unavailable_s"] == 2.9
    series = a.series["per_second"]
    rows = sorted(zip(series["s"], series["outcome"], series["n"], series["p99_ms"], strict=True))
    # second 0 holds the acks completed before 1 s (latencies 1..91 ms), second 1 the other 9.
    assert rows == [(0, "ok", 91, 91.0), (1, "ok", 9, 100.0), (4, "fail", 1, 5.0)]


def test_no_sends_no_latency(spark, tmp_path):
    h = History().event("runner", "replicas-dumped")
    m = analyze(spark, h.write(tmp_path / "history")).metrics
    assert (m["acked"], m["unavailability"], m["latency_ms"]["p99"], m["latency_ms"]["max"]) == (
        0, [], None, None)


def test_a_send_without_completion_time_does_not_break_the_metrics(spark, tmp_path):
    h = History()
    h.send(0, 0, 0, 0)
    h.rows["sends"].append({**h.rows["sends"][0], "seq": 1, "offset": 1, "t_complete": None})
    m = analyze(spark, h.write(tmp_path / "history")).metrics
    assert (m["acked"], m["latency_ms"]["p50"], m["unavailability"]) == (2, 5.0, [])


def test_isr_recovery_is_the_longest_wait_from_an_op_end_to_every_partition_full():
    import pandas as pd

    from reports.metrics import isr_recovery_s
    s = 1_000_000_000
    # partition 0 full again 2 s after the first op ends, partition 1 at 3.5 s; the second op's ISR
    # refills in 1 s
    meta = pd.DataFrame([(t * s // 2, "chaos", p, n) for t, p, n in [
        (0, 0, 3), (0, 1, 3), (4, 0, 2), (4, 1, 2), (8, 0, 3), (11, 1, 3), (20, 0, 2), (24, 0, 3)]],
        columns=["t", "topic", "partition", "isr_size"])
    faults = pd.DataFrame({"fault": ["kill", "heal", "kill"], "t_start": [1 * s, 2 * s, 9 * s],
                           "t_end": [2 * s, 3 * s, 11 * s]})
    assert isr_recovery_s(meta, faults) == 3.5
    assert isr_recovery_s(meta.iloc[:0], faults) is None and isr_recovery_s(
        meta, faults.iloc[:0]) is None
    # a second topic's partition 0 (replication factor 2) full again only at 7 s: the wait is to
    # then
    other = pd.DataFrame([(t * s // 2, "chaos-2", 0, n) for t, n in [(0, 2), (4, 1), (14, 2)]],
                         columns=["t", "topic", "partition", "isr_size"])
    assert isr_recovery_s(pd.concat([meta, other]), faults) == 5.0


def test_request_counters_are_each_handles_last_report_summed(spark, tmp_path):
    # producer-0's handle reported twice (its last: 3 timed out, 5 retried), a later handle of it
    # once, producer-1's once; librdkafka's counters only grow, so each handle's last report is its
    # total.
    h = History().send(0, 0, 0, 0)
    for source, handle, counts in (("producer-0", "7/rdkafka#producer-1", (1, 2, 0)),
                                   ("producer-0", "7/rdkafka#producer-1", (3, 5, 1)),
                                   ("producer-0", "7/rdkafka#producer-2", (2, 2, 0)),
                                   ("producer-1", "8/rdkafka#producer-1", (0, 4, 0))):
        detail = json.dumps({"handle": handle,
                             **dict(zip(("timed_out", "retried", "errors"), counts, strict=True))})
        h.event(source, Event.REQUESTS, detail=detail)
    m = analyze(spark, h.write(tmp_path / "history")).metrics
    assert m["requests"] == {"timed_out": 5, "retried": 11, "errors": 1}
    assert analyze(spark,
                   History().send(0, 0, 0, 0).write(tmp_path / "none")).metrics["requests"] is None


def test_the_statistics_callback_sums_brokers_and_records_only_moves():
    events = []

    class Recorder:
        def event(self, source, kind, **row):
            events.append((source, kind, json.loads(row["detail"])))

    stats = RequestStats(Recorder(), "producer-0", "chaos")
    report = {"name": "rdkafka#producer-1", "brokers": {
        "b1": {"req_timeouts": 2, "txretries": 3, "txerrs": 0},
        "b2": {"req_timeouts": 1, "txretries": 1, "txerrs": 1}}}
    stats(json.dumps(report))
    stats(json.dumps(report))
    assert events == [("producer-0", Event.REQUESTS,
                       {"handle": f"{os.getpid()}/rdkafka#producer-1", "timed_out": 3,
                                                       "retried": 4, "errors": 1})]


def test_memory_peak_and_slope_over_the_runs_steady_samples(spark, tmp_path):
    # harness + clients: 50 MiB at start-up, then 100, 130, 120 MiB at 1, 31 and 61 min (least
    # squares 20 MiB per hour), then 130 and 200 MiB after the workload: 200 the peak, but neither
    # they nor the start-up sample are in the slope. Each process's growth is from minute 1 to 61: a
    # client there at 61 only (restarted under another name) has none
    h = History().send(0, 0, 0, 0)
    for minute, harness, each, end in ((0, 40, {"producer-0": 10}, {}),
                                       (1, 60, {"producer-0": 40}, {}),
                                       (31, 70, {"producer-0": 60}, {}),
                                       (61, 65, {"producer-0": 45, "consumer-1": 10}, {}),
                                       (61.5, 120, {"consumer-1": 10}, {"end": True}),
                                       (62, 200, {}, {"end": True})):
        h.t = int(minute * 60 * 1000 * MS)
        h.event("harness", Event.MEMORY, detail=json.dumps({
            "harness": harness * 2**20, "clients": sum(each.values()) * 2**20,
            "each": {name: mib * 2**20 for name, mib in each.items()}, **end}))
    m = analyze(spark, h.write(tmp_path / "history")).metrics
    assert m["memory"] == {"samples": 6, "first_mib": 50.0, "peak_mib": 200.0,
                           "harness_peak_mib": 200.0, "slope_mib_per_h": 20.0,
                           "growth_mib": {"harness": 5.0, "producer-0": 5.0}}
    assert analyze(spark,
                   History().send(0, 0, 0, 0).write(tmp_path / "none")).metrics["memory"] is None
    short = History().send(0, 0, 0, 0)  # three steady samples over two minutes: no hourly slope
    for minute in (0, 1, 2, 3):
        short.t = minute * 60 * 1000 * MS
        short.event("harness", Event.MEMORY,
                    detail=json.dumps({"harness": 2**26, "clients": minute * 2**20}))
    assert analyze(spark,
                   short.write(tmp_path / "short")).metrics["memory"]["slope_mib_per_h"] is None


def test_the_memory_sampler_counts_the_harness_and_live_clients_only():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    try:
        events = []

        class Recorder:
            def event(self, source, kind, **kw):
                events.append((source, kind, json.loads(kw["detail"])))

        MemorySampler(lambda: {"child": child.pid}, Recorder()).sample()
        MemorySampler(lambda: {"gone": gone.pid}, Recorder()).sample()
    finally:
        child.kill()
    (_, kind, with_child), (_, _, without) = events
    assert (kind == Event.MEMORY and with_child["harness"] > 20 * 2**20
            and with_child["clients"] > 2**20)
    assert with_child["each"] == {"child": with_child["clients"]}
    assert without["clients"] == 0 and without["each"] == {"gone": 0}


def test_memory_samples_after_the_workload_are_marked_and_left_out_of_the_slope():
    events = []

    class Recorder:
        def event(self, source, kind, **kw):
            events.append(json.loads(kw["detail"]))

    sampler = MemorySampler(lambda: {}, Recorder())
    sampler.sample()
    sampler.workload_over()  # the producers stopped: the heal, drain and replica dump follow
    sampler.sample()
    assert ["end" in e for e in events] == [False, True]


def test_the_tier_sampler_records_segments_gained_and_lost_and_log_start_moves(spark, tmp_path):
    def seg(base: int, sid: str) -> RemoteSegment:
        return RemoteSegment("chaos", 0, base, sid * 22, 1000)

    looks = iter([([seg(0, "a")], {("chaos", 0): 0}),
                  ([seg(0, "a"), seg(10, "b")], {("chaos", 0): 0}),
                  ([seg(10, "b")], {("chaos", 0): 10}),
                  ([seg(10, "b")], {("chaos", 0): 10})])
    now: tuple = ()

    def look() -> list[RemoteSegment]:
        nonlocal now
        now = next(looks)
        return now[0]

    h = History().send(0, 0, 0, 0)

    class Into:  # the history writer's event(), into the builder (whose clock stamps it)
        def event(self, source, kind, t=None, **kw):
            h.event(source, kind, **kw)

    sampler = TierSampler(look, lambda: now[1], Into())
    for _ in range(4):
        sampler.sample()
    rows = [(e["kind"], e["offset"]) for e in h.rows["events"]]
    assert rows == [(Event.REMOTE_UPLOADED, 0), (Event.REMOTE_UPLOADED, 10),
                    (Event.REMOTE_DELETED, 0), (Event.LOG_START, 10)]
    m = analyze(spark, h.write(tmp_path / "history")).metrics
    assert m["remote"] == {"uploaded": 2, "deleted": 1, "log_start_moves": 1}
