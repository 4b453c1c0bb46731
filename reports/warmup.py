"""A small clean history whose analysis trains a Spark driver JVM: its class archive at setup, its
JIT and Spark's generated-code cache while a run's workload goes on; its timeline loads matplotlib
meanwhile too."""

from __future__ import annotations

import tempfile
from pathlib import Path

from pyspark.sql import SparkSession

from contracts.history import HistoryWriter
from reports import charts
from reports.analysis import analyze


def small_history(directory: Path, sends: int = 200) -> Path:
    """Two producers' acked sends over three partitions, each read by the final drain and held by
    one replica."""
    writer = HistoryWriter(directory)
    for seq in range(sends):
        value = {"producer": seq % 2, "seq": seq, "topic": "t", "partition": seq % 3,
                 "offset": seq // 3}
        writer.write("sends", {**value, "t_invoke": seq, "t_complete": seq + 5, "outcome": "ok"})
        writer.write("reads", {**value, "reader": "drain", "phase": "final", "poll": 1, "t": seq,
                               "checksum_ok": True})
        writer.write("replicas", {**value, "broker": 1, "leader_epoch": 0, "checksum_ok": True})
    writer.close()
    return directory


def analyze_small(spark: SparkSession) -> None:
    """Analyze a small history once and draw its timeline: the next analysis in this JVM finds its
    code compiled, and the next report finds matplotlib loaded."""
    with tempfile.TemporaryDirectory() as tmp:
        series = analyze(spark, small_history(Path(tmp))).series
        charts.timeline(series, [], [], len(series["sample"]))
