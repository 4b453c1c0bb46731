"""Find every anomaly of DESIGN.md in a run's history with PySpark DataFrame operations (no Python UDFs).

Each anomaly gets a count and at most 20 examples; metrics sit beside them. `Facts` says what the run could
establish (did the final drain reach the end, were replicas dumped), which decides `unseen` vs `lost-write`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from reports.history_io import load_all

EXAMPLES = 20
GAP_NS = 1_000_000_000
BUCKET_NS = 100_000_000
VALUE = ["producer", "seq"]
POSITION = ["topic", "partition", "offset"]


@dataclass
class Anomaly:
    count: int
    examples: list[dict]


@dataclass
class Facts:
    """What the run established; anything False makes some checks unknown."""

    drain_ran: bool
    drain_complete: bool
    partitions_not_drained: list[int]
    replicas_dumped: bool
    recovered: bool
    assign_readers: list[str]
    group_commits: str = "none"  # "none" (no group), "known", or "unknown" (the committed offsets were not read)


@dataclass
class Analysis:
    anomalies: dict[str, Anomaly]
    metrics: dict
    facts: Facts
    series: dict = field(default_factory=dict)  # small time series for charts

    def counts(self) -> dict[str, int]:
        return {k: a.count for k, a in self.anomalies.items()}


def _examples(df: DataFrame, order: list[str]) -> Anomaly:
    """Count and the first EXAMPLES rows of an anomaly DataFrame (cached: it is read twice)."""
    df = df.cache()
    count = df.count()
    rows = [r.asDict(recursive=True) for r in df.orderBy(*order).limit(EXAMPLES).collect()] if count else []
    df.unpersist()
    return Anomaly(count, rows)


def facts_of(events: DataFrame, assign_readers: list[str]) -> tuple[Facts, DataFrame]:
    """Drain ends per partition (small) and what the run established."""
    ends = (events.filter(F.col("kind") == "final-end")
            .select("topic", "partition", F.col("offset").alias("end"),
                    (F.col("detail") == "reached").alias("reached")))
    end_rows = ends.collect()
    kinds = {r["kind"] for r in events.select("kind").distinct().collect()}
    not_drained = sorted(r["partition"] for r in end_rows if not r["reached"])
    facts = Facts(drain_ran=bool(end_rows), drain_complete=bool(end_rows) and not not_drained,
                  partitions_not_drained=not_drained, replicas_dumped="replicas-dumped" in kinds,
                  recovered="liveness" not in kinds, assign_readers=assign_readers,
                  group_commits="unknown" if "committed-unknown" in kinds else
                  "known" if "committed" in kinds else "none")
    return facts, ends


def analyze(spark: SparkSession, history: Path, assign_readers: list[str] | None = None) -> Analysis:
    """Every anomaly and metric of one history directory."""
    t = load_all(spark, history)
    sends, reads, replicas, events = t["sends"], t["reads"], t["replicas"], t["events"]
    # Readers that read contiguously from the beginning: the final drain and assign-mode live readers.
    contiguous = ["drain", *(assign_readers or [])]
    facts, ends = facts_of(events, assign_readers or [])

    ours = reads.filter((F.col("producer") >= 0) & F.col("checksum_ok"))
    ok = sends.filter(F.col("outcome") == "ok")
    acked_pos = ok.filter(F.col("offset") >= 0).select(*VALUE, *POSITION, F.lit("ack").alias("source"))
    # Replica records count only below the high watermark the drain saw: above it a follower may still truncate.
    rep = (replicas.filter(F.col("producer") >= 0).join(F.broadcast(ends.select("topic", "partition", "end")),
                                                        ["topic", "partition"], "left")
           .filter(F.col("end").isNull() | (F.col("offset") < F.col("end"))))
    positions = (acked_pos
                 .unionByName(ours.select(*VALUE, *POSITION, F.lit("read").alias("source")))
                 .unionByName(rep.select(*VALUE, *POSITION, F.lit("replica").alias("source"))))
    positions = positions.cache()

    seen = (ours.groupBy(*VALUE).agg(F.max((F.col("phase") == "live").cast("int")).alias("live"),
                                     F.max((F.col("phase") == "final").cast("int")).alias("final"),
                                     F.first("partition").alias("read_partition"),
                                     F.min("t").alias("first_read_t")))
    in_replica = rep.select(*VALUE).distinct().withColumn("in_replica", F.lit(1))
    covered_to = (ours.filter(F.col("reader").isin(contiguous)).groupBy("topic", "partition")
                  .agg(F.max("offset").alias("covered_to")))

    acked = (ok.join(seen, VALUE, "left").join(in_replica, VALUE, "left")
             .join(F.broadcast(covered_to), ["topic", "partition"], "left")
             .join(F.broadcast(ends.select("topic", "partition", "reached")), ["topic", "partition"], "left"))
    unread = acked.filter(F.col("live").isNull() & F.col("final").isNull())
    covered = F.coalesce((F.col("offset") >= 0) & (F.col("offset") <= F.col("covered_to")), F.lit(False))
    absent_everywhere = F.coalesce(F.col("reached"), F.lit(False)) & F.col("in_replica").isNull() & F.lit(
        facts.replicas_dumped)
    lost = unread.filter(covered | absent_everywhere)
    unseen = unread.filter(~(covered | absent_everywhere))
    send_cols = ["producer", "seq", "topic", "partition", "offset", "t_invoke", "t_complete"]

    anomalies: dict[str, Anomaly] = {}
    anomalies["lost-write"] = _examples(lost.select(*send_cols), VALUE)
    anomalies["unseen"] = _examples(unseen.select(*send_cols), VALUE)

    dup = (positions.groupBy(*VALUE).agg(F.countDistinct(*POSITION).alias("positions"),
                                         F.sort_array(F.collect_set(F.struct("partition", "offset"))).alias("at"))
           .filter(F.col("positions") > 1))
    anomalies["duplicate"] = _examples(dup.select(*VALUE, "positions", F.slice("at", 1, 5).alias("at")), VALUE)

    inconsistent = (positions.groupBy(*POSITION).agg(F.countDistinct(*VALUE).alias("values"),
                                                     F.collect_set(F.struct(*VALUE, "source")).alias("seen"))
                    .filter(F.col("values") > 1))
    anomalies["inconsistent-offset"] = _examples(
        inconsistent.select(*POSITION, "values", F.slice("seen", 1, 6).alias("seen")), POSITION)

    w_send = Window.partitionBy("producer", "topic", "partition").orderBy("seq").rowsBetween(
        Window.unboundedPreceding, -1)
    reordered = (acked_pos.withColumn("prev_max", F.max("offset").over(w_send))
                 .filter(F.col("offset") < F.col("prev_max")))
    anomalies["nonmonotonic-send"] = _examples(reordered.select(*VALUE, "partition", "offset", "prev_max"), VALUE)

    skip, back = _poll_order(reads, events)
    anomalies["poll-skip"] = _examples(skip, ["reader", "partition", "offset"])
    anomalies["nonmonotonic-poll"] = _examples(back, ["reader", "partition", "offset"])

    failed = sends.filter(F.col("outcome") == "fail").select(*VALUE)
    aborted = ours.join(failed, VALUE, "left_semi")
    read_cols = ["reader", "phase", "topic", "partition", "offset", "producer", "seq"]
    anomalies["aborted-read"] = _examples(aborted.select(*read_cols), ["reader", "offset"])

    foreign = reads.filter((F.col("producer") < 0) | ~F.col("checksum_ok"))
    never_sent = ours.join(sends.select(*VALUE), VALUE, "left_anti")
    anomalies["unexpected"] = _examples(foreign.unionByName(never_sent).select(*read_cols, "checksum_ok"),
                                        ["reader", "offset"])

    drained = ends.filter("reached").select(F.col("partition").alias("read_partition"))
    vanished = (seen.filter((F.col("live") == 1) & (F.col("final") == 0))
                .join(F.broadcast(drained), ["read_partition"], "left_semi"))
    anomalies["vanished-read"] = _examples(vanished.select(*VALUE, F.col("read_partition").alias("partition"),
                                                           "first_read_t"), VALUE)

    # At-least-once for a group: every record below its partition's final committed offset was read by a member.
    committed = events.filter(F.col("kind") == "committed").select("topic", "partition",
                                                                   F.col("offset").alias("committed"))
    group_read = ours.filter(F.col("phase") == "live").select(*VALUE).distinct()
    skipped = (ours.filter(F.col("phase") == "final").select(*VALUE, *POSITION).distinct()
               .join(F.broadcast(committed), ["topic", "partition"]).filter(F.col("offset") < F.col("committed"))
               .join(group_read, VALUE, "left_anti"))
    anomalies["committed-unread"] = _examples(skipped, POSITION)

    divergent = (rep.groupBy(*POSITION).agg(F.countDistinct(*VALUE).alias("values"),
                                            F.sort_array(F.collect_list(F.struct("broker", *VALUE))).alias("replicas"))
                 .filter(F.col("values") > 1))
    anomalies["replica-divergence"] = _examples(divergent, POSITION)

    metrics, series = _metrics(spark, t, seen, in_replica)
    positions.unpersist()
    return Analysis(anomalies, metrics, facts, series)


def _poll_order(reads: DataFrame, events: DataFrame) -> tuple[DataFrame, DataFrame]:
    """Live readers' consecutive offsets per partition within one assignment: gaps (skip) and going back."""
    markers = (events.filter(F.col("kind").isin("assign", "revoke", "lost"))
               .select(F.col("source").alias("reader"), "t", F.lit(1).alias("marker"), F.lit(-1).alias("poll"),
                       F.lit(None).cast("string").alias("topic"), F.lit(None).cast("long").alias("partition"),
                       F.lit(None).cast("long").alias("offset")))
    live = reads.filter(F.col("phase") == "live").select("reader", "t", F.lit(0).alias("marker"), "poll", "topic",
                                                          "partition", "offset")
    w_gen = Window.partitionBy("reader").orderBy("t", F.desc("marker"), "poll", "offset").rowsBetween(
        Window.unboundedPreceding, 0)
    gen = live.unionByName(markers).withColumn("generation", F.sum("marker").over(w_gen)).filter("marker = 0")
    w = Window.partitionBy("reader", "generation", "topic", "partition").orderBy("poll", "offset")
    steps = gen.withColumn("prev", F.lag("offset").over(w)).filter(F.col("prev").isNotNull())
    cols = ["reader", "generation", "partition", "prev", "offset"]
    return (steps.filter(F.col("offset") > F.col("prev") + 1).select(*cols),
            steps.filter(F.col("offset") <= F.col("prev")).select(*cols))


def _metrics(spark: SparkSession, t: dict[str, DataFrame], seen: DataFrame, in_replica: DataFrame):
    sends = t["sends"]
    by_outcome = {r["outcome"]: r["n"] for r in sends.groupBy("outcome").agg(F.count("*").alias("n")).collect()}
    info = sends.filter(F.col("outcome") == "info").select(*VALUE)
    recovered = info.join(seen.select(*VALUE).unionByName(in_replica.select(*VALUE)).distinct(), VALUE,
                          "left_semi").count()
    ok = sends.filter(F.col("outcome") == "ok")
    lat = ok.select(((F.col("t_complete") - F.col("t_invoke")) / 1e6).alias("ms"))
    q = lat.agg(F.percentile_approx("ms", [0.5, 0.95, 0.99], 1000).alias("q"), F.max("ms").alias("max")).first()
    bounds = sends.agg(F.min("t_invoke").alias("t0"), F.max("t_complete").alias("t1")).first()
    t0 = bounds["t0"] or 0
    buckets = sorted(r[0] for r in ok.select((F.col("t_complete") / BUCKET_NS).cast("long")).distinct().collect())
    windows = _gaps(buckets, t0, bounds["t1"] or t0)
    per_s = (sends.groupBy(((F.col("t_complete") - t0) / 1e9).cast("long").alias("s"), "outcome")
             .agg(F.count("*").alias("n"), F.expr("percentile_approx((t_complete - t_invoke) / 1e6, 0.99)")
                  .alias("p99_ms")).orderBy("s").toPandas())
    meta = t["metadata"].orderBy("t").toPandas()
    faults = t["faults"].orderBy("t_start").toPandas()
    leader_changes: dict[int, int] = {}
    if not meta.empty:
        for p, g in meta.groupby("partition"):
            lead = g["leader"].tolist()
            leader_changes[int(p)] = sum(1 for a, b in zip(lead, lead[1:], strict=False) if a != b)
        meta["isr_size"] = meta["isr"].fillna("").map(lambda s: len([x for x in s.split(",") if x]))
    metrics = {
        "acked": by_outcome.get("ok", 0), "failed": by_outcome.get("fail", 0),
        "indeterminate": by_outcome.get("info", 0), "recovered": recovered,
        "latency_ms": {"p50": _r(q["q"], 0), "p95": _r(q["q"], 1), "p99": _r(q["q"], 2), "max": q["max"]},
        "unavailability": windows,
        "unavailable_s": round(sum(w["length_s"] for w in windows), 2),
        "leader_changes": leader_changes,
        "reads": t["reads"].count(),
    }
    return metrics, {"per_second": per_s, "metadata": meta, "faults": faults, "t0": t0}


def _r(q, i):
    return round(q[i], 2) if q else None


def _gaps(buckets: list[int], t0: int, t1: int) -> list[dict]:
    """Windows with no successful ack for more than 1 s (from 100 ms buckets), as seconds since the first send."""
    if not t0:
        return []
    edges = [t0 // BUCKET_NS, *buckets, t1 // BUCKET_NS]
    out = []
    for a, b in zip(edges, edges[1:], strict=False):
        length = (b - a - 1) * BUCKET_NS
        if length > GAP_NS:
            out.append({"start_s": round(((a + 1) * BUCKET_NS - t0) / 1e9, 1), "length_s": round(length / 1e9, 1)})
    return out
