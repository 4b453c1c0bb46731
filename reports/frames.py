"""The shared indexes every anomaly checker reads, built once per history with DataFrame operations
(no UDFs).

A checker never scans the raw tables for what these already hold: every sighting of a value (`obs`),
one row per value that can take part in an anomaly (`values`), one row per position holding more
than one value (`places`), and the run's `Facts` (did the final drain reach the end, were the
replicas dumped).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from contracts.history import CLIENT_TROUBLE, Event, Fate, Outcome, fault_outcome
from contracts.payload import COPY_BASE
from contracts.results import LATE_S, Facts, partition_name
from contracts.scenario import copy_input
from reports.history_io import load_all, sends_in
from reports.judged_replicas import judged
from reports.share_frames import ShareFrames, share_frames
from reports.spark import side_by_side

EXAMPLES = 20
# sends; below, one pass over every row is cheaper than fingerprinting first
PREFILTER_FROM = 1_000_000
MAX_SUSPECTS = 2_000_000  # values a broadcast join carries cheaply (16 bytes each)
BUCKET_BITS = 6  # fingerprint buckets of 64 offsets, one bit each in a long (see _distinct_in_64)
VALUE = ["producer", "seq"]
POSITION = ["topic", "partition", "offset"]
SEND, LIVE, FINAL, REPLICA = range(4)  # an observation's `src`: what sighted the value
OK, FAIL, INFO = range(1, 4)  # a send's outcome code `oc`
SOURCES = ["ack", "read", "read", "replica"]  # what each `src` counts as in examples
# The values worth a row in `values`: those that can take part in an anomaly or a metric
SUSPECT = "(ok AND NOT final) OR moved OR failed OR NOT sent OR (live AND NOT final) OR info"


def chaos_of(faults: DataFrame, facts: Facts) -> None:
    """Into `facts`: how the planned fault ops ended, how many fired over LATE_S late, why any were
    skipped, and what makes the chaos unproven: an op that failed or had no effect, or a fault line
    none of whose ops fired."""
    rows = [r for r in faults.orderBy("t_start").collect() if r["fault"] != "heal"]
    outcomes = [fault_outcome(r) for r in rows]
    skipped: Counter = Counter()
    # a line's ops by outcome (a mix line's ops are of several kinds)
    by_line: dict[int, Counter] = {}
    kinds: dict[int, dict[str, None]] = {}
    for r, outcome in zip(rows, outcomes, strict=True):
        detail = json.loads(r["detail"] or "{}")
        by_line.setdefault(r["line"], Counter())[outcome] += 1
        kinds.setdefault(r["line"], {})[r["fault"]] = None
        if outcome in (Outcome.FAILED, Outcome.NO_EFFECT):
            facts.chaos_problems.append(f"{r['fault']} planned at {detail.get('planned_at', '?')} "
                                        "s "
                                        f"on brokers [{r['targets']}] {outcome}: "
                                        f"{detail.get('error', '')}")
        elif outcome == Outcome.SKIPPED:
            skipped["brokers held by another line" if "held" in detail.get("skipped", "")
                    else "no broker matched"] += 1
        facts.late_ops += outcome == Outcome.FIRED and (detail.get("delay_s") or 0.0) > LATE_S
    for line, seen in by_line.items():
        if line is not None and line >= 0 and not seen[Outcome.FIRED]:
            said = ", ".join(f"{n} {o}" for o, n in sorted(seen.items()))
            facts.chaos_problems.append(f"fault line {line} ({', '.join(kinds[line])}) never took "
                                        f"effect: {said}")
    facts.ops, facts.skipped_because = dict(Counter(outcomes)), dict(skipped)


@dataclass(frozen=True)
class Readers:
    """What the analysis must know of the live readers beyond the history: which read every
    partition from the beginning (assign mode), and which read with
    isolation.level=read_committed."""

    contiguous: tuple[str, ...] = ()
    committed: tuple[str, ...] = ()
    copy_topic: str = ""  # the eos-copy stage's output topic ("": the run has no stage)


def _rebalanced(events: DataFrame, kinds: set[str], readers: Readers) -> bool:
    """A group moved partitions: a member gave one up or lost it, or a group (consumer-N or
    copier-N) handed a partition out more than once (a crashed member cannot say it lost its
    partitions; KIP-848 and cooperative members only gain)."""
    if {Event.REVOKE, Event.LOST} & kinds:
        return True
    if Event.ASSIGN not in kinds:
        return False
    handed = events.filter((F.col("kind") == Event.ASSIGN.value) & (F.col("partition") >= 0)
                           & ~F.col("source").isin(list(readers.contiguous)))
    group = F.regexp_replace("source", "-[0-9]+$", "").alias("group")
    return bool(handed.groupBy(group, "topic", "partition").count().filter(F.col("count") > 1)
                .take(1))


def facts_of(events: DataFrame, faults: DataFrame, readers: Readers) -> tuple[Facts, DataFrame]:
    """Drain ends per partition (small) and what the run established."""
    # a log start counts only where the topic's retention is known: without it, records gone below
    # it are judged as any other absent record (lost writes)
    kept = events.filter(F.col("kind") == Event.TOPIC_CONFIG.value).select("topic")
    starts = events.filter(F.col("kind") == Event.FINAL_START.value).join(
        kept, "topic", "left_semi").select("topic", "partition", F.col("offset").alias("start"),
                                           F.col("t").alias("t_start"))
    ends = (events.filter(F.col("kind") == Event.FINAL_END.value)
            .select("topic", "partition", F.col("offset").alias("end"),
                    (F.col("detail") == "reached").alias("reached"))
            .join(starts, ["topic", "partition"], "left"))
    end_rows = ends.collect()
    first = F.slice(F.sort_array(F.collect_list(F.struct("t", "source", "detail"))), 1, EXAMPLES)
    by_kind = events.groupBy("kind").agg(first.alias("first")).collect()
    kinds = {r["kind"] for r in by_kind}
    trouble = sorted((e["t"], f'{e["source"]} {r["kind"]}: {e["detail"]}')
                     for r in by_kind if r["kind"] in CLIENT_TROUBLE for e in r["first"])
    not_drained = sorted(partition_name(r["topic"], r["partition"]) for r in end_rows
                         if not r["reached"])
    facts = Facts(drain_ran=bool(end_rows), drain_complete=bool(end_rows) and not not_drained,
                  partitions_not_drained=not_drained,
                  replicas_dumped=Event.REPLICAS_DUMPED in kinds,
                  recovered=Event.LIVENESS not in kinds, assign_readers=list(readers.contiguous),
                  committed_readers=list(readers.committed),
                  group_commits="unknown" if Event.COMMITTED_UNKNOWN in kinds else
                  "known" if Event.COMMITTED in kinds else "none",
                  client_trouble=[line for _, line in trouble[:EXAMPLES]],
                  txn_protocols=sorted({e["detail"] for r in by_kind
                                        if r["kind"] == Event.TXN_PROTOCOL for e in r["first"]}),
                  liveness=[e["detail"] for r in by_kind if r["kind"] == Event.LIVENESS
                            for e in r["first"]])
    chaos_of(faults, facts)
    facts.observed = ((["rebalance"] if _rebalanced(events, kinds, readers) else [])
                      + (["txn-protocol-switch"] if len(facts.txn_protocols) > 1 else []))
    if readers.copy_topic:
        copied = events.filter(F.col("kind") == Event.COPY_COMMITTED.value).select(
            "partition", "offset", "detail")
        rows = copied.collect()
        facts.copy_commits = "known" if rows else "unknown"
        facts.copy_behind = sorted(r["partition"] for r in rows
                                   if max(r["offset"], 0) < int(r["detail"] or 0))
    return facts, ends


def with_tid(df: DataFrame) -> DataFrame:
    """`tid`: the topic's hash, so the big aggregates and their joins carry numbers, not strings."""
    return df.withColumn("tid", F.xxhash64("topic"))


def _spread(c: str, cond) -> F.Column:
    """True when column `c` takes more than one value over the rows matching `cond` (fixed width, no
    sets)."""
    return F.min(F.when(cond, F.col(c))) != F.max(F.when(cond, F.col(c)))


def _observations(sends: DataFrame, ours: DataFrame, rep: DataFrame) -> DataFrame:
    """Every sighting of a value, one row each: its send (SEND, with outcome code OK/FAIL/INFO), a
    live or final read, or a replica record. `placed` marks the rows that put the value at a
    position (an ack with an offset, a read, a replica); `tid` is the topic's hash, so the big
    aggregates shuffle numbers only."""
    none = F.lit(None).cast("long")
    code = F.when(F.col("outcome") == "ok", OK).when(
        F.col("outcome") == "fail", FAIL).otherwise(INFO)
    send = sends.select(*VALUE, *POSITION, F.lit(SEND).alias("src"), code.alias("oc"),
                        none.alias("t"), none.alias("broker"))
    read = ours.select(*VALUE, *POSITION,
                       F.when(F.col("phase") == "live", LIVE).otherwise(FINAL).alias("src"),
                       F.lit(None).cast("int").alias("oc"), "t", none.alias("broker"))
    replica = rep.select(*VALUE, *POSITION, F.lit(REPLICA).alias("src"),
                         F.lit(None).cast("int").alias("oc"), none.alias("t"), "broker")
    obs = send.unionByName(read).unionByName(replica)
    placed = (F.col("src") != SEND) | ((F.col("oc") == OK) & (F.col("offset") >= 0))
    return with_tid(obs.withColumn("placed", placed))


def _per_value(obs: DataFrame) -> DataFrame:
    """One row per (producer, seq) from one hash aggregate of fixed-width columns: how it was
    sighted (boolean flags from one bit_or), its send's position, where and when it was first read,
    and whether it sits at more than one position (`moved`)."""
    src, placed = F.col("src"), F.col("placed")
    bit = F.expr(f"IF(src = {SEND}, 1 + shiftleft(1, oc), shiftleft(1, src + 3))")
    v = obs.groupBy(*VALUE).agg(
        F.bit_or(bit).alias("bits"),
        F.max(F.when(src == SEND, F.col("tid"))).alias("tid"),
        F.max(F.when(src == SEND, F.col("partition"))).alias("partition"),
        F.max(F.when(src == SEND, F.col("offset"))).alias("offset"),
        F.min(F.when(src.isin(LIVE, FINAL), F.col("partition"))).alias("read_partition"),
        F.min(F.when(src.isin(LIVE, FINAL), F.col("t"))).alias("first_read_t"),
        F.min(F.when(src.isin(LIVE, FINAL), F.col("offset"))).alias("read_offset"),
        (_spread("tid", placed) | _spread("partition", placed) | _spread("offset", placed))
                                .alias("moved"))
    flags = {"sent": 1, "ok": 1 << OK, "failed": 1 << FAIL, "info": 1 << INFO,
             "live": 1 << (LIVE + 3), "final": 1 << (FINAL + 3), "in_replica": 1 << (REPLICA + 3)}
    return v.select("*",
                    *((F.col("bits").bitwiseAND(b) != 0).alias(name) for name, b in flags.items()))


def _per_position(obs: DataFrame) -> DataFrame:
    """One row per (tid, partition, offset) holding more than one value, across all sightings
    (`mixed`) and across the replicas alone (`diverged`): min != max of producer or seq,
    fixed-width, no distinct sets."""
    rep = F.col("src") == REPLICA

    def differ(cond):
        return _spread("producer", cond) | _spread("seq", cond)

    return (obs.filter("placed").groupBy("tid", "partition", "offset")
            .agg(differ(F.lit(True)).alias("mixed"),
                 F.coalesce(differ(rep), F.lit(False)).alias("diverged"))
            .filter("mixed"))


def _bucket(c: str) -> F.Column:
    """The fingerprint bucket of column `c`: all but its low BUCKET_BITS bits."""
    return F.shiftright(c, BUCKET_BITS)


def _distinct_in_64(c: str) -> F.Column:
    """How many distinct values column `c` takes over a group whose values share all but their low
    BUCKET_BITS bits: a 64-bit map of them, fixed width (no sets)."""
    return F.expr(f"bit_count(bit_or(shiftleft(1L, {c} & {(1 << BUCKET_BITS) - 1})))")


def _fingerprints(obs: DataFrame, need_live: bool) -> DataFrame:
    """One row per (tid, partition, bucket of 2**BUCKET_BITS offsets) with `clean`: acks and final
    reads (and live reads, for a group) are present, no source (acks, live reads, final reads, each
    broker's replica) holds an offset twice, and every source holds the same multiset of (value,
    position) rows (equal count and 96-bit sum of hashes). In a clean bucket each position holds one
    value, sighted alike everywhere, so none of its rows can take part in an anomaly. Fixed-width
    partial aggregates: the shuffle is a few rows per bucket."""
    h, g = F.xxhash64(*VALUE, "offset"), F.xxhash64("offset", *VALUE)
    low = F.lit(0xFFFFFFFF)
    sid = F.when(F.col("src") == REPLICA, 10 + F.col("broker")).otherwise(F.col("src"))
    per_source = (obs.filter("placed")
                  .groupBy("tid", "partition", _bucket("offset").alias("bucket"), sid.alias("sid"))
                  .agg(F.count("*").alias("n"), _distinct_in_64("offset").alias("distinct"),
                       F.sum(h.bitwiseAND(low)).alias("s1"),
                       F.sum(F.shiftrightunsigned(h, 32)).alias("s2"),
                       F.sum(g.bitwiseAND(low)).alias("s3")))

    def has(s: int) -> F.Column:
        return F.max((F.col("sid") == s).cast("int")) == 1

    stamp = F.struct("n", "s1", "s2", "s3")
    clean = (has(SEND) & has(FINAL) & (has(LIVE) if need_live else F.lit(True))
             & F.min(F.col("n") == F.col("distinct")) & (F.min(stamp) == F.max(stamp)))
    return per_source.groupBy("tid", "partition", "bucket").agg(clean.alias("clean"))


def _suspect_rows(obs: DataFrame, sends: DataFrame, need_live: bool, always: bool) -> DataFrame:
    """Every sighting of the values that can take part in an anomaly: values sighted in a bucket
    that is not clean, sends that placed nothing (fail, info, ok without an offset), and all values
    of a producer whose send rows repeat a seq (a value acked twice, at two positions the log agrees
    with, leaves every bucket clean). A clean run's rows are almost all left out; when over a
    quarter of the buckets are not clean or the suspects exceed MAX_SUSPECTS, `obs` itself is
    cheaper (unless `always`)."""
    buckets = _fingerprints(obs, need_live).localCheckpoint()
    tally = {r["clean"]: r["count"] for r in buckets.groupBy("clean").count().collect()}
    if not always and tally.get(False, 0) * 4 > sum(tally.values()):
        return obs
    unclean = buckets.filter(~F.col("clean")).select(
        "tid", "partition", "bucket", F.lit(True).alias("unclean"))
    repeats = F.count("*") != _distinct_in_64("seq")
    repeated = (sends.groupBy("producer", _bucket("seq")).agg(repeats.alias("repeats"))
                .filter("repeats").select("producer", F.lit(True).alias("repeated")).distinct())
    # one scan; both small tables are broadcast
    flagged = (obs.withColumn("bucket", _bucket("offset"))
               .join(F.broadcast(unclean), ["tid", "partition", "bucket"], "left")
               .join(F.broadcast(repeated), "producer", "left"))
    suspect = (F.col("placed") & F.col("unclean")
               .isNotNull()) | ~F.col("placed") | F.col("repeated").isNotNull()
    suspects = flagged.filter(suspect).select(*VALUE).distinct().localCheckpoint()
    if not always and suspects.count() > MAX_SUSPECTS:
        return obs
    return obs.join(F.broadcast(suspects), VALUE, "left_semi").localCheckpoint()


def is_large(history: Path) -> bool:
    """A history of millions of sends: worth fingerprinting first, and worth a JVM compiled for long
    jobs."""
    return sends_in(history) >= PREFILTER_FROM


@dataclass(eq=False)
class Frames:
    """The indexes of one history (lazy DataFrames; `values` and `places` checkpointed), shared by
    every checker."""

    sends: DataFrame
    reads: DataFrame
    events: DataFrame
    ours: DataFrame  # reads of intact values of ours
    obs: DataFrame  # every sighting (only the suspect values' when prefiltered)
    values: DataFrame  # one row per suspect value with its flags
    places: DataFrame  # positions holding more than one value
    # replica records below the drain's end on brokers in the last ISR (judged_replicas), with
    # their batch's producer epoch
    replicas: DataFrame
    # the drain's end per partition, and the log start when it ended (`start` at `t_start`, or null)
    ends: DataFrame
    facts: Facts
    # readers that read contiguously from the beginning (the drain, assign-mode readers)
    contiguous: list[str]
    metadata: DataFrame  # the sampler's leader and ISR samples
    faults: DataFrame  # the fault ops as they fired
    # the sends of transactions, with their transaction's fate and when its commit was asked for
    fates: DataFrame
    # eos-copy: the output as a read_committed drain read it, by input position
    copied: DataFrame | None = None
    copy_input: str = ""  # eos-copy: the stage's input topic
    share: ShareFrames | None = None  # the share workload's deliveries and final states

    @cached_property
    def placed(self) -> DataFrame:
        """The sightings that put a value at a position."""
        return self.obs.filter("placed")

    @cached_property
    def few(self) -> bool:
        """`values` holds at most MAX_SUSPECTS rows: its subsets are broadcast to the big tables'
        joins."""
        return self.values.count() <= MAX_SUSPECTS

    def keys(self, cond: str) -> DataFrame:
        """The values matching `cond` as join keys, broadcast when `few` (a checkpoint hides their
        size from Spark, which would otherwise shuffle and sort the whole big side of the join)."""
        keys = self.values.filter(cond).select(*VALUE)
        return F.broadcast(keys) if self.few else keys

    def sends_of(self, keys: DataFrame) -> DataFrame:
        """The send rows of the values in `keys` (an example's detail)."""
        cols = ["producer", "seq", "topic", "partition", "offset", "t_invoke", "t_complete"]
        return self.sends.join(keys.select(*VALUE), VALUE, "left_semi").select(*cols)

    def send_extent(self, keys: DataFrame) -> DataFrame:
        """Where and when the sends of the values in `keys` were acknowledged: their partitions,
        first and last completion (one row; a headline's facts, over every value, not only the
        examples)."""
        return self.sends.join(keys.select(*VALUE), VALUE, "left_semi").agg(
            F.sort_array(F.collect_set("partition")).alias("partitions"),
            F.min("t_complete").alias("t_first"), F.max("t_complete").alias("t_last"))

    def positions_of(self, keys: DataFrame) -> DataFrame:
        """How many positions each value of `keys` sits at, and the first five (an example's
        detail)."""
        return self.placed.join(keys, VALUE, "left_semi").groupBy(*VALUE).agg(
            F.countDistinct(*POSITION).alias("positions"),
            F.slice(F.sort_array(F.collect_set(F.struct(*POSITION))), 1, 5).alias("at"))


def _fates(sends: DataFrame, txns: DataFrame) -> DataFrame:
    """One row per send in a transaction: its value, ack position, transaction, fate (unknown
    without a txns row: its producer died first) and t_commit (-1: never asked to commit; null: no
    txns row, so unknown)."""
    fate = txns.select("producer", "txn", "fate", "t_commit")
    return (sends.filter(F.col("txn") >= 0).select(*VALUE, *POSITION, "txn")
            .join(fate, ["producer", "txn"], "left")
            .select(*VALUE, *POSITION, "txn",
                    F.coalesce("fate", F.lit(Fate.UNKNOWN.value)).alias("fate"),
                    "t_commit"))


def build(spark: SparkSession, history: Path, readers: Readers | None = None,
          prefilter: bool | None = None) -> Frames:
    """The indexes of one history directory. `prefilter`: keep only the suspect rows (True), every
    row (False), or whichever is cheaper for this history (None); the checks' results are the same
    (the tests prove it)."""
    if prefilter is None and not is_large(history):
        # e.g. a chaos run's own history: too small for the fingerprint's jobs to pay off
        prefilter = False
    readers = readers or Readers()
    t = load_all(spark, history)
    sends, reads, replicas, events = t["sends"], t["reads"], t["replicas"], t["events"]
    facts, ends = facts_of(events, t["faults"], readers)
    facts.transactional = bool(t["txns"].limit(1).count())
    ours = reads.filter((F.col("producer") >= 0) & F.col("checksum_ok"))
    copied = None
    # the output's values name input positions, not sends: they are judged apart
    if readers.copy_topic:
        out = F.col("topic") == readers.copy_topic
        copied = ours.filter(out & (F.col("phase") == "final")).select(
            "partition", "offset", (F.col("producer") - COPY_BASE).alias("in_partition"),
            F.col("seq").alias("in_offset"))
        ours = ours.filter(~out)
    rep = judged(replicas, ends, t["metadata"])
    obs = _observations(sends, ours, rep)
    suspect = SUSPECT + (" OR NOT live" if facts.group_commits != "none" else "")
    if prefilter is not False:
        obs = _suspect_rows(obs, sends, need_live=facts.group_commits != "none",
                            always=bool(prefilter))
    values, places = side_by_side(lambda: _per_value(obs).filter(suspect).localCheckpoint(),
                                  lambda: _per_position(obs).localCheckpoint())
    return Frames(sends, reads, events, ours, obs, values, places, rep, ends, facts,
                  ["drain", *readers.contiguous], t["metadata"], t["faults"],
                  _fates(sends, t["txns"]), copied,
                  copy_input(readers.copy_topic) if readers.copy_topic else "",
                  share_frames(t["shares"], t["share_acks"], events, facts))
