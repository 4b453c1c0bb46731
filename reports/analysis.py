"""Every anomaly of a run's history: the shared frames built once, then each registered checker,
then every count from one Spark job and examples only for what occurred. Metrics sit beside them."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import reduce
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from reports import frames
from reports.checkers import CHECKERS, Finding
from reports.frames import Facts, Frames, is_large, partition_name
from reports.metrics import client_requests, isr_recovery_s, memory, remote_tier, send_metrics
from reports.provoked import from_metadata, from_share
from reports.spark import side_by_side

__all__ = ["Analysis", "Anomaly", "Facts", "analyze", "is_large"]
from contracts.results import SAMPLED_SENDS


@dataclass
class Anomaly:
    """How often an anomaly occurred, and its first examples."""

    count: int
    examples: list[dict]
    # partitions, t_first, t_last of its sends (where it has sends)
    span: dict = field(default_factory=dict)


@dataclass
class Analysis:
    """One history's anomalies, metrics and facts, and the small time series its charts draw."""

    anomalies: dict[str, Anomaly]
    metrics: dict
    facts: Facts
    series: dict = field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        """Each anomaly's count."""
        return {k: a.count for k, a in self.anomalies.items()}


def settle(findings: dict[str, Finding | None]) -> dict[str, Anomaly]:
    """Every anomaly's count from one Spark job (a union of their rows, labelled), then the examples
    and spans of those that occurred from one more: a clean run pays one job, not one per anomaly.
    None: the anomaly does not apply to this run."""
    live = {k: f for k, f in findings.items() if f is not None}
    counts: dict[str, int] = {}
    if live:
        labelled = [f.rows.select(F.lit(k).alias("anomaly")) for k, f in live.items()]
        counts = {r["anomaly"]: r["count"] for r in reduce(DataFrame.unionAll, labelled)
                  .groupBy("anomaly").count()
                  .collect()}
    occurred = {k: Anomaly(n, []) for k, n in counts.items() if n}
    if occurred:
        shown = reduce(DataFrame.unionAll,
                       [live[k].labelled(k, a.count) for k, a in occurred.items()]).collect()
        for r in sorted(shown, key=lambda r: (r["anomaly"], r["i"])):
            row = json.loads(r["json"])
            if r["i"] < 0:
                occurred[r["anomaly"]].span = row
            else:
                occurred[r["anomaly"]].examples.append(row)
    return {k: occurred.get(k) or Anomaly(0, []) for k in findings}


def analyze(spark: SparkSession, history: Path, readers: frames.Readers | None = None,
            prefilter: bool | None = None) -> Analysis:
    """Every anomaly and metric of one history directory. `prefilter`: judge only the suspect rows
    (True), every row (False), or whichever is cheaper for this history (None); the results are the
    same (the tests prove it)."""
    f = frames.build(spark, history, readers, prefilter)
    anomalies, (metrics, series) = side_by_side(
        lambda: settle({name: check(f) for name, check in CHECKERS.items()}), lambda: _metrics(f))
    return Analysis(anomalies, metrics, f.facts, series)


def _metrics(f: Frames) -> tuple[dict, dict]:
    """The sends' metrics (reports.metrics), recovered values, reads, and leader changes and ISR
    size over time."""
    metrics, per_s, t0 = send_metrics(f.sends)
    meta = f.metadata.orderBy("t").toPandas()
    faults = f.faults.orderBy("t_start").toPandas()
    leader_changes: dict[str, int] = {}
    if not meta.empty:
        meta["topic"] = meta["topic"].fillna("")  # lanes are per topic and partition
        for (topic, p), g in meta.groupby(["topic", "partition"]):
            lead = g["leader"].tolist()
            leader_changes[partition_name(topic, p)] = sum(
                1 for a, b in zip(lead, lead[1:], strict=False) if a != b)
        meta["isr_size"] = meta["isr"].fillna("").map(lambda s: len([x for x in s.split(",") if x]))
    share = f.share.metrics() if f.share is not None else None
    f.facts.observed = sorted({*f.facts.observed, *from_metadata(meta), *from_share(share)})
    metrics.update(recovered=f.values.filter("info AND (live OR final OR in_replica)").count(),
                   leader_changes=leader_changes, reads=f.reads.count(),
                   requests=client_requests(f.events), memory=memory(f.events),
                   remote=remote_tier(f.events),
                   share=share,
                   isr_recovery_s=isr_recovery_s(meta, faults) if "isr_size" in meta else None)
    sends = metrics["acked"] + metrics["failed"] + metrics["indeterminate"]
    sample = (f.sends.filter(F.col("t_complete").isNotNull())
              .sample(fraction=min(1.0, SAMPLED_SENDS / max(sends, 1)), seed=1)
              .select("t_invoke",
                      ((F.col("t_complete") - F.col("t_invoke")) / 1e6).alias("latency_ms"),
                      "outcome", "producer", "seq", "partition", "offset")
              .limit(SAMPLED_SENDS).toPandas())
    series = {"per_second": per_s.toPandas(), "metadata": meta, "faults": faults, "t0": t0,
              "sample": sample}
    if f.share is not None:
        series["share"], series["share_failed"] = (d.toPandas() for d in f.share.per_second(t0))
    return metrics, series
