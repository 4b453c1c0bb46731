"""Find every anomaly of DESIGN.md in a run's history with PySpark DataFrame operations (no Python UDFs).

Each anomaly gets a count and at most 20 examples; metrics sit beside them. `Facts` says what the run could
establish (did the final drain reach the end, were replicas dumped), which decides `unseen` vs `lost-write`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from reports.history_io import load_all, sends_in
from reports.metrics import send_metrics

EXAMPLES = 20
PREFILTER_FROM = 1_000_000  # sends; below, one pass over every row is cheaper than fingerprinting first
MAX_SUSPECTS = 2_000_000  # values a broadcast join carries cheaply (16 bytes each)
BUCKET_BITS = 6  # fingerprint buckets of 64 offsets, one bit each in a long (see _distinct_in_64)
VALUE = ["producer", "seq"]
POSITION = ["topic", "partition", "offset"]
SEND, LIVE, FINAL, REPLICA = range(4)  # an observation's `src`: what sighted the value
OK, FAIL, INFO = range(1, 4)  # a send's outcome code `oc`
SOURCES = ["ack", "read", "read", "replica"]  # what each `src` counts as in examples
# Client events that say a workload client misbehaved or was restarted: shown with the verdict, never judged
CLIENT_TROUBLE = ("client-error", "fatal", "recreated", "stopped", "unflushed")


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
    client_trouble: list[str] = field(default_factory=list)  # the first client errors, fatal errors and restarts


@dataclass
class Analysis:
    anomalies: dict[str, Anomaly]
    metrics: dict
    facts: Facts
    series: dict = field(default_factory=dict)  # small time series for charts

    def counts(self) -> dict[str, int]:
        return {k: a.count for k, a in self.anomalies.items()}


@dataclass
class Finding:
    """An anomaly's rows (lazy), the order its examples are taken in, and how those few rows are widened: `detail`
    joins them back to the raw rows (shown in `shown` order), so the big aggregates stay fixed-width and wide
    columns exist for 20 keys only."""

    rows: DataFrame
    order: list[str]
    detail: Callable[[DataFrame], DataFrame] | None = None
    shown: list[str] | None = None

    def examples(self) -> list[dict]:
        first = self.rows.orderBy(*self.order).limit(EXAMPLES)
        if self.detail is not None:
            first = self.detail(F.broadcast(first)).orderBy(*(self.shown or self.order))
        return [r.asDict(recursive=True) for r in first.collect()]


def _settle(findings: dict[str, Finding | None]) -> dict[str, Anomaly]:
    """Every anomaly's count from one Spark job (a union of their rows, labelled), then examples only for those that
    occurred: a clean run pays one job, not one per anomaly. None: the anomaly does not apply to this run."""
    live = {k: f for k, f in findings.items() if f is not None}
    counts: dict[str, int] = {}
    if live:
        labelled = [f.rows.select(F.lit(k).alias("anomaly")) for k, f in live.items()]
        union = labelled[0]
        for df in labelled[1:]:
            union = union.unionAll(df)
        counts = {r["anomaly"]: r["count"] for r in union.groupBy("anomaly").count().collect()}
    return {k: Anomaly(counts.get(k, 0), live[k].examples() if counts.get(k) else []) for k in findings}


def facts_of(events: DataFrame, assign_readers: list[str]) -> tuple[Facts, DataFrame]:
    """Drain ends per partition (small) and what the run established."""
    ends = (events.filter(F.col("kind") == "final-end")
            .select("topic", "partition", F.col("offset").alias("end"),
                    (F.col("detail") == "reached").alias("reached")))
    end_rows = ends.collect()
    first = F.slice(F.sort_array(F.collect_list(F.struct("t", "source", "detail"))), 1, EXAMPLES)
    by_kind = events.groupBy("kind").agg(first.alias("first")).collect()
    kinds = {r["kind"] for r in by_kind}
    trouble = sorted((e["t"], f'{e["source"]} {r["kind"]}: {e["detail"]}')
                     for r in by_kind if r["kind"] in CLIENT_TROUBLE for e in r["first"])
    not_drained = sorted(r["partition"] for r in end_rows if not r["reached"])
    facts = Facts(drain_ran=bool(end_rows), drain_complete=bool(end_rows) and not not_drained,
                  partitions_not_drained=not_drained, replicas_dumped="replicas-dumped" in kinds,
                  recovered="liveness" not in kinds, assign_readers=assign_readers,
                  group_commits="unknown" if "committed-unknown" in kinds else
                  "known" if "committed" in kinds else "none",
                  client_trouble=[line for _, line in trouble[:EXAMPLES]])
    return facts, ends


def _with_tid(df: DataFrame) -> DataFrame:
    """`tid`: the topic's hash, so the big aggregates and their joins carry numbers, not strings."""
    return df.withColumn("tid", F.xxhash64("topic"))


def _spread(c: str, cond) -> F.Column:
    """True when column `c` takes more than one value over the rows matching `cond` (fixed width, no sets)."""
    return F.min(F.when(cond, F.col(c))) != F.max(F.when(cond, F.col(c)))


def _observations(sends: DataFrame, ours: DataFrame, rep: DataFrame) -> DataFrame:
    """Every sighting of a value, one row each: its send (SEND, with outcome code OK/FAIL/INFO), a live or final
    read, or a replica record. `placed` marks the rows that put the value at a position (an ack with an offset, a
    read, a replica); `tid` is the topic's hash, so the big aggregates shuffle numbers only."""
    none = F.lit(None).cast("long")
    code = F.when(F.col("outcome") == "ok", OK).when(F.col("outcome") == "fail", FAIL).otherwise(INFO)
    send = sends.select(*VALUE, *POSITION, F.lit(SEND).alias("src"), code.alias("oc"), none.alias("t"),
                        none.alias("broker"))
    read = ours.select(*VALUE, *POSITION, F.when(F.col("phase") == "live", LIVE).otherwise(FINAL).alias("src"),
                       F.lit(None).cast("int").alias("oc"), "t", none.alias("broker"))
    replica = rep.select(*VALUE, *POSITION, F.lit(REPLICA).alias("src"), F.lit(None).cast("int").alias("oc"),
                         none.alias("t"), "broker")
    obs = send.unionByName(read).unionByName(replica)
    placed = (F.col("src") != SEND) | ((F.col("oc") == OK) & (F.col("offset") >= 0))
    return _with_tid(obs.withColumn("placed", placed))


def _per_value(obs: DataFrame) -> DataFrame:
    """One row per (producer, seq) from one hash aggregate of fixed-width columns: how it was sighted (boolean
    flags from one bit_or), its send's position, where and when it was first read, and whether it sits at more
    than one position (`moved`)."""
    src, placed = F.col("src"), F.col("placed")
    bit = F.expr(f"IF(src = {SEND}, 1 + shiftleft(1, oc), shiftleft(1, src + 3))")
    v = obs.groupBy(*VALUE).agg(
        F.bit_or(bit).alias("bits"),
        F.max(F.when(src == SEND, F.col("tid"))).alias("tid"),
        F.max(F.when(src == SEND, F.col("partition"))).alias("partition"),
        F.max(F.when(src == SEND, F.col("offset"))).alias("offset"),
        F.min(F.when(src.isin(LIVE, FINAL), F.col("partition"))).alias("read_partition"),
        F.min(F.when(src.isin(LIVE, FINAL), F.col("t"))).alias("first_read_t"),
        (_spread("tid", placed) | _spread("partition", placed) | _spread("offset", placed)).alias("moved"))
    flags = {"sent": 1, "ok": 1 << OK, "failed": 1 << FAIL, "info": 1 << INFO, "live": 1 << (LIVE + 3),
             "final": 1 << (FINAL + 3), "in_replica": 1 << (REPLICA + 3)}
    return v.select("*", *((F.col("bits").bitwiseAND(b) != 0).alias(name) for name, b in flags.items()))


def _per_position(obs: DataFrame) -> DataFrame:
    """One row per (tid, partition, offset) holding more than one value, across all sightings (`mixed`) and across
    the replicas alone (`diverged`): min != max of producer or seq, fixed-width, no distinct sets."""
    rep = F.col("src") == REPLICA

    def differ(cond):
        return _spread("producer", cond) | _spread("seq", cond)

    return (obs.filter("placed").groupBy("tid", "partition", "offset")
            .agg(differ(F.lit(True)).alias("mixed"), F.coalesce(differ(rep), F.lit(False)).alias("diverged"))
            .filter("mixed"))


def _bucket(c: str) -> F.Column:
    """The fingerprint bucket of column `c`: all but its low BUCKET_BITS bits."""
    return F.shiftright(c, BUCKET_BITS)


def _distinct_in_64(c: str) -> F.Column:
    """How many distinct values column `c` takes over a group whose values share all but their low BUCKET_BITS
    bits: a 64-bit map of them, fixed width (no sets)."""
    return F.expr(f"bit_count(bit_or(shiftleft(1L, {c} & {(1 << BUCKET_BITS) - 1})))")


def _fingerprints(obs: DataFrame, need_live: bool) -> DataFrame:
    """One row per (tid, partition, bucket of 2**BUCKET_BITS offsets) with `clean`: acks and final reads (and live
    reads, for a group) are present, no source (acks, live reads, final reads, each broker's replica) holds an
    offset twice, and every source holds the same multiset of (value, position) rows (equal count and 96-bit sum
    of hashes). In a clean bucket each position holds one value, sighted alike everywhere, so none of its rows
    can take part in an anomaly. Fixed-width partial aggregates: the shuffle is a few rows per bucket."""
    h, g = F.xxhash64(*VALUE, "offset"), F.xxhash64("offset", *VALUE)
    low = F.lit(0xFFFFFFFF)
    sid = F.when(F.col("src") == REPLICA, 10 + F.col("broker")).otherwise(F.col("src"))
    per_source = (obs.filter("placed")
                  .groupBy("tid", "partition", _bucket("offset").alias("bucket"), sid.alias("sid"))
                  .agg(F.count("*").alias("n"),
                       _distinct_in_64("offset").alias("distinct"),
                       F.sum(h.bitwiseAND(low)).alias("s1"), F.sum(F.shiftrightunsigned(h, 32)).alias("s2"),
                       F.sum(g.bitwiseAND(low)).alias("s3")))

    def has(s: int) -> F.Column:
        return F.max((F.col("sid") == s).cast("int")) == 1

    stamp = F.struct("n", "s1", "s2", "s3")
    clean = (has(SEND) & has(FINAL) & (has(LIVE) if need_live else F.lit(True))
             & F.min(F.col("n") == F.col("distinct")) & (F.min(stamp) == F.max(stamp)))
    return per_source.groupBy("tid", "partition", "bucket").agg(clean.alias("clean"))


def _suspect_rows(obs: DataFrame, sends: DataFrame, need_live: bool, always: bool) -> DataFrame:
    """Every sighting of the values that can take part in an anomaly: values sighted in a bucket that is not clean,
    sends that placed nothing (fail, info, ok without an offset), and all values of a producer whose send rows
    repeat a seq (a value acked twice, at two positions the log agrees with, leaves every bucket clean). A clean
    run's rows are almost all left out; when over a quarter of the buckets are not clean or the suspects exceed
    MAX_SUSPECTS, `obs` itself is cheaper (unless `always`)."""
    buckets = _fingerprints(obs, need_live).localCheckpoint()
    tally = {r["clean"]: r["count"] for r in buckets.groupBy("clean").count().collect()}
    if not always and tally.get(False, 0) * 4 > sum(tally.values()):
        return obs
    unclean = buckets.filter(~F.col("clean")).select("tid", "partition", "bucket", F.lit(True).alias("unclean"))
    repeats = F.count("*") != _distinct_in_64("seq")
    repeated = (sends.groupBy("producer", _bucket("seq")).agg(repeats.alias("repeats"))
                .filter("repeats").select("producer", F.lit(True).alias("repeated")).distinct())
    flagged = (obs.withColumn("bucket", _bucket("offset"))  # one scan; both small tables are broadcast
               .join(F.broadcast(unclean), ["tid", "partition", "bucket"], "left")
               .join(F.broadcast(repeated), "producer", "left"))
    suspect = (F.col("placed") & F.col("unclean").isNotNull()) | ~F.col("placed") | F.col("repeated").isNotNull()
    suspects = flagged.filter(suspect).select(*VALUE).distinct().localCheckpoint()
    if not always and suspects.count() > MAX_SUSPECTS:
        return obs
    return obs.join(F.broadcast(suspects), VALUE, "left_semi").localCheckpoint()


def is_large(history: Path) -> bool:
    """A history of millions of sends: worth fingerprinting first, and worth a JVM compiled for long jobs."""
    return sends_in(history) >= PREFILTER_FROM


def analyze(spark: SparkSession, history: Path, assign_readers: list[str] | None = None,
            prefilter: bool | None = None) -> Analysis:
    """Every anomaly and metric of one history directory. `prefilter`: judge only the suspect rows (True), every
    row (False), or whichever is cheaper for this history (None); the results are the same (the tests prove it)."""
    if prefilter is None and not is_large(history):
        prefilter = False  # e.g. a chaos run's own history: too small for the fingerprint's jobs to pay off
    t = load_all(spark, history)
    sends, reads, replicas, events = t["sends"], t["reads"], t["replicas"], t["events"]
    # Readers that read contiguously from the beginning: the final drain and assign-mode live readers.
    contiguous = ["drain", *(assign_readers or [])]
    facts, ends = facts_of(events, assign_readers or [])

    ours = reads.filter((F.col("producer") >= 0) & F.col("checksum_ok"))
    # Replica records count only below the high watermark the drain saw: above it a follower may still truncate.
    rep = (replicas.filter(F.col("producer") >= 0).join(F.broadcast(ends.select("topic", "partition", "end")),
                                                        ["topic", "partition"], "left")
           .filter(F.col("end").isNull() | (F.col("offset") < F.col("end"))))
    obs = _observations(sends, ours, rep)
    # Only the values that can take part in an anomaly or a metric are kept (a clean run keeps almost none).
    suspect = "(ok AND NOT final) OR moved OR failed OR NOT sent OR (live AND NOT final) OR info"
    if facts.group_commits != "none":
        suspect += " OR NOT live"
    if prefilter is not False:
        obs = _suspect_rows(obs, sends, need_live=facts.group_commits != "none", always=bool(prefilter))
    values = _per_value(obs).filter(suspect).localCheckpoint()
    places = _per_position(obs).localCheckpoint()

    tids = F.broadcast(_with_tid(ends).select("tid", "partition", "reached"))
    covered_to = F.broadcast(_with_tid(ours.filter(F.col("reader").isin(contiguous)).groupBy("topic", "partition")
                                       .agg(F.max("offset").alias("covered_to"))).drop("topic"))
    # Acked values the final log lacks. One a live consumer read and the log then lost (truncated by an unclean
    # election, say) is still a lost write; only Jepsen's "covered but never read" rule needs it unread.
    missing = (values.filter("ok AND NOT final")
               .join(covered_to, ["tid", "partition"], "left").join(tids, ["tid", "partition"], "left"))
    covered = ~F.col("live") & F.coalesce((F.col("offset") >= 0) & (F.col("offset") <= F.col("covered_to")),
                                          F.lit(False))
    absent_everywhere = F.coalesce(F.col("reached"), F.lit(False)) & ~F.col("in_replica") & F.lit(
        facts.replicas_dumped)
    send_cols = ["producer", "seq", "topic", "partition", "offset", "t_invoke", "t_complete"]

    def the_sends(keys: DataFrame) -> DataFrame:
        return sends.join(keys.select(*VALUE), VALUE, "left_semi").select(*send_cols)

    found: dict[str, Finding | None] = {}
    lost = covered | absent_everywhere
    found["lost-write"] = Finding(missing.filter(lost).select(*VALUE), VALUE, the_sends)
    found["unseen"] = Finding(missing.filter(~F.col("live") & ~lost).select(*VALUE), VALUE, the_sends)

    placed = obs.filter("placed")

    def positions(keys: DataFrame) -> DataFrame:
        return placed.join(keys, VALUE, "left_semi").groupBy(*VALUE).agg(
            F.countDistinct(*POSITION).alias("positions"),
            F.slice(F.sort_array(F.collect_set(F.struct(*POSITION))), 1, 5).alias("at"))

    moved = values.filter("moved").select(*VALUE)
    at_timeout = _outstanding_at_timeout(sends, moved)
    found["duplicate"] = Finding(moved.join(at_timeout, VALUE, "left_anti"), VALUE, positions)
    found["timeout-duplicate"] = Finding(at_timeout, VALUE, positions)
    spot = ["tid", "partition", "offset"]
    source = F.element_at(F.array(*map(F.lit, SOURCES)), F.col("src") + 1).alias("source")
    found["inconsistent-offset"] = Finding(
        places.select(*spot), spot,
        lambda keys: placed.join(keys, spot, "left_semi").groupBy(*POSITION).agg(
            F.countDistinct(*VALUE).alias("values"),
            F.slice(F.sort_array(F.collect_set(F.struct(*VALUE, source))), 1, 6).alias("seen")), POSITION)

    acked_pos = _with_tid(sends.filter((F.col("outcome") == "ok") & (F.col("offset") >= 0))).select(
        *VALUE, "tid", "partition", "offset")
    w_send = Window.partitionBy("producer", "tid", "partition").orderBy("seq").rowsBetween(
        Window.unboundedPreceding, -1)
    reordered = (acked_pos.withColumn("prev_max", F.max("offset").over(w_send))
                 .filter(F.col("offset") < F.col("prev_max")))
    found["nonmonotonic-send"] = Finding(reordered.select(*VALUE, "partition", "offset", "prev_max"), VALUE)

    skip, back = _poll_order(reads, events)
    found["poll-skip"] = Finding(skip, ["reader", "partition", "offset"])
    found["nonmonotonic-poll"] = Finding(back, ["reader", "partition", "offset"])

    read_cols = ["reader", "phase", "topic", "partition", "offset", "producer", "seq"]
    aborted = ours.join(values.filter("failed").select(*VALUE), VALUE, "left_semi")
    found["aborted-read"] = Finding(aborted.select(*read_cols), ["reader", "offset"])

    foreign = reads.filter((F.col("producer") < 0) | ~F.col("checksum_ok"))
    never_sent = ours.join(values.filter("NOT sent").select(*VALUE), VALUE, "left_semi")
    # A run cut off before its final drain may have killed producers before they recorded their last sends
    # (those in flight): a value read without a send row is unexpected only in a run that got to its drain.
    unexpected = foreign.unionByName(never_sent) if facts.drain_ran else foreign
    found["unexpected"] = Finding(unexpected.select(*read_cols, "checksum_ok"), ["reader", "offset"])

    drained = ends.filter("reached").select(F.col("partition").alias("read_partition"))
    vanished = (values.filter("live AND NOT final")
                .join(F.broadcast(drained), ["read_partition"], "left_semi"))
    found["vanished-read"] = Finding(vanished.select(*VALUE, F.col("read_partition").alias("partition"),
                                                     "first_read_t"), VALUE)
    found["committed-unread"] = _committed_unread(events, ours, values, facts)

    found["replica-divergence"] = Finding(
        places.filter("diverged").select(*spot), spot,
        lambda keys: placed.filter(F.col("src") == REPLICA).join(keys, spot, "left_semi").groupBy(*POSITION).agg(
            F.countDistinct(*VALUE).alias("values"),
            F.sort_array(F.collect_list(F.struct("broker", *VALUE))).alias("replicas")), POSITION)

    metrics, series = _metrics(t, values)
    return Analysis(_settle(found), metrics, facts, series)


def _outstanding_at_timeout(sends: DataFrame, keys: DataFrame) -> DataFrame:
    """The values of `keys` their producer was still awaiting when one of its messages timed out (_MSG_TIMED_OUT):
    librdkafka then bumps the producer's epoch and re-sends what was unacknowledged, which the broker cannot
    de-duplicate. Only the duplicated values are joined with the timeouts, so a clean run joins nothing."""
    timeouts = sends.filter((F.col("outcome") == "info") & (F.col("error") == "_MSG_TIMED_OUT")).select(
        "producer", F.col("t_complete").alias("t_out"))
    awaited = sends.join(keys, VALUE, "left_semi").select(*VALUE, "t_invoke", "t_complete")
    return (awaited.join(timeouts, "producer")
            .filter((F.col("t_invoke") <= F.col("t_out"))
                    & F.coalesce(F.col("t_complete") >= F.col("t_out"), F.lit(True)))
            .select(*VALUE).distinct())


def _committed_unread(events: DataFrame, ours: DataFrame, values: DataFrame, facts: Facts) -> Finding | None:
    """At-least-once for a group: every record below its partition's final committed offset was read by a member."""
    if facts.group_commits == "none":
        return None
    committed = events.filter(F.col("kind") == "committed").select("topic", "partition",
                                                                   F.col("offset").alias("committed"))
    never_live = values.filter("final AND NOT live").select(*VALUE)
    skipped = (ours.filter(F.col("phase") == "final").join(never_live, VALUE, "left_semi")
               .select(*VALUE, *POSITION).distinct()
               .join(F.broadcast(committed), ["topic", "partition"]).filter(F.col("offset") < F.col("committed")))
    return Finding(skipped, POSITION)


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


def _metrics(t: dict[str, DataFrame], values: DataFrame):
    """The sends' metrics (reports.metrics), recovered values, reads, and leader changes and ISR size over time."""
    metrics, per_s, t0 = send_metrics(t["sends"])
    meta = t["metadata"].orderBy("t").toPandas()
    faults = t["faults"].orderBy("t_start").toPandas()
    leader_changes: dict[int, int] = {}
    if not meta.empty:
        for p, g in meta.groupby("partition"):
            lead = g["leader"].tolist()
            leader_changes[int(p)] = sum(1 for a, b in zip(lead, lead[1:], strict=False) if a != b)
        meta["isr_size"] = meta["isr"].fillna("").map(lambda s: len([x for x in s.split(",") if x]))
    metrics.update(recovered=values.filter("info AND (live OR final OR in_replica)").count(),
                   leader_changes=leader_changes, reads=t["reads"].count())
    return metrics, {"per_second": per_s.toPandas(), "metadata": meta, "faults": faults, "t0": t0}
