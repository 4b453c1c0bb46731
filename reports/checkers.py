"""One checker per anomaly, each a small function over the shared frames (Jepsen's kafka.clj keeps
one `*-cases` function per anomaly over shared indexes), registered under its name in
contracts.anomalies and in its order."""

from __future__ import annotations

from dataclasses import fields

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from contracts.anomalies import ANOMALIES
from contracts.history import CLOCK_MARGIN_MS, Event, Fate, Retention
from reports import resends, retention
from reports.finding import CHECKERS, Finding, checker
from reports.frames import POSITION, REPLICA, SOURCES, VALUE, Frames, with_tid

SPOT = ["tid", "partition", "offset"]
RETENTION_FIELDS = [f.name for f in fields(Retention)]
READ_COLS = ["reader", "phase", "topic", "partition", "offset", "producer", "seq"]


def _missing(f: Frames) -> tuple[DataFrame, Column]:
    """Acked values the final log lacks, and which of them are provably lost: a contiguous reader
    covered their offset without reading them, or a complete final read and every replica lack them.
    One a live consumer read and the log then lost (truncated by an unclean election, say) is still
    a lost write."""
    tids = F.broadcast(with_tid(f.ends).select("tid", "partition", "reached", "start"))
    covered_to = F.broadcast(with_tid(f.ours.filter(F.col("reader").isin(f.contiguous))
                                      .groupBy("topic", "partition")
                                      .agg(F.max("offset").alias("covered_to")))
                             .drop("topic"))
    missing = (f.values.filter("ok AND NOT final")
               .join(covered_to, ["tid", "partition"], "left")
               .join(tids, ["tid", "partition"], "left"))
    covered = ~F.col("live") & F.coalesce((F.col("offset") >= 0)
                                          & (F.col("offset") <= F.col("covered_to")),
                                          F.lit(False))
    absent_everywhere = (F.coalesce(F.col("reached"), F.lit(False)) & ~F.col("in_replica")
                         & F.lit(f.facts.replicas_dumped))
    return missing, (covered | absent_everywhere) & ~_expired()


def _expired() -> Column:
    """Below its partition's log start offset when the drain ended: deleted by retention, rightly
    or not (retention-breach judges which)."""
    return F.coalesce((F.col("offset") >= 0) & (F.col("offset") < F.col("start")), F.lit(False))


def _in_txns(f: Frames, fates: tuple[Fate, ...] = tuple(Fate)) -> DataFrame:
    """The values sent in a transaction whose fate is one of `fates`."""
    return f.fates.filter(F.col("fate").isin(*(x.value for x in fates))).select(*VALUE)


@checker("lost-write")
def lost_write(f: Frames) -> Finding:
    """An acknowledged send outside any transaction, provably absent (a transaction's sends:
    lost-committed)."""
    missing, lost = _missing(f)
    rows = missing.filter(lost).select(*VALUE)
    if f.facts.transactional:
        rows = rows.join(_in_txns(f), VALUE, "left_anti")
    return Finding(rows, VALUE, f.sends_of, extent=f.send_extent)


@checker("lost-committed")
def lost_committed(f: Frames) -> Finding | None:
    """A send whose transaction committed, provably absent from the final log."""
    if not f.facts.transactional:
        return None
    missing, lost = _missing(f)
    committed = _in_txns(f, (Fate.COMMITTED,))
    rows = missing.filter(lost).select(*VALUE).join(committed, VALUE, "left_semi")
    return Finding(rows, VALUE, f.sends_of, extent=f.send_extent)


@checker("unseen")
def unseen(f: Frames) -> Finding:
    """Acked (in a committed transaction, if in any), never read, and not provably lost: the final
    read did not reach it."""
    missing, lost = _missing(f)
    rows = missing.filter(~F.col("live") & ~lost & ~_expired()).select(*VALUE)
    if f.facts.transactional:
        rows = rows.join(_in_txns(f, (Fate.ABORTED, Fate.UNKNOWN)), VALUE, "left_anti")
    return Finding(rows, VALUE, f.sends_of, extent=f.send_extent)


@checker("retention-breach")
def retention_breach(f: Frames) -> Finding:
    """An acknowledged send (of a committed transaction, if in one) below the final log start
    although its topic's retention kept it when it went: the bytes after it then, at most
    `record_bytes_max` an offset, and its age then are both below the limits. Read before it went
    or not: retention deleted it."""
    acked = with_tid(f.sends.filter((F.col("outcome") == "ok") & (F.col("offset") >= 0)))
    ends = with_tid(f.ends).select("tid", "partition", "start", "end", "t_start")
    gone = (acked.select(*VALUE, "tid", "partition", "offset", "t_invoke")
            .join(F.broadcast(ends), ["tid", "partition"]).filter(_expired()))
    if f.facts.transactional:
        gone = gone.join(_in_txns(f, (Fate.ABORTED, Fate.UNKNOWN)), VALUE, "left_anti")
    limits = with_tid(f.events.filter(F.col("kind") == Event.TOPIC_CONFIG.value).select(
        "topic", *(F.get_json_object("detail", f"$.{n}").cast("long").alias(n)
                   for n in RETENTION_FIELDS))).drop("topic")
    rows = retention.when_gone(f, gone, acked).join(F.broadcast(limits), "tid")
    after = (F.col("end_then") - F.col("offset") - 1) * F.col("record_bytes_max")
    age_ms = (F.col("t_gone") - F.col("t_invoke")) / 1e6
    within = (((F.col("bytes") < 0) | (after < F.col("bytes")))
              & ((F.col("ms") < 0) | (age_ms < F.col("ms") - CLOCK_MARGIN_MS)))
    return Finding(rows.filter(within).select(*VALUE), VALUE, f.sends_of, extent=f.send_extent)


@checker("duplicate")
def duplicate(f: Frames) -> Finding:
    """One value at more than one position (an ack's offset counts as one), unless its producer
    re-sent it itself (timeout-duplicate, epoch-duplicate)."""
    moved = f.values.filter("moved").select(*VALUE)
    re_sent = resends.of(f)
    own = re_sent.at_timeout.unionByName(re_sent.under_new_epoch)
    return Finding(moved.join(own, VALUE, "left_anti"), VALUE, f.positions_of,
                   extent=f.send_extent)


@checker("timeout-duplicate")
def timeout_duplicate(f: Frames) -> Finding:
    return Finding(resends.of(f).at_timeout, VALUE, f.positions_of, extent=f.send_extent)


@checker("epoch-duplicate")
def epoch_duplicate(f: Frames) -> Finding:
    return Finding(resends.of(f).under_new_epoch, VALUE, f.positions_of, extent=f.send_extent)


@checker("inconsistent-offset")
def inconsistent_offset(f: Frames) -> Finding:
    """One position holding different values across acks, reads and replicas."""
    source = F.element_at(F.array(*map(F.lit, SOURCES)), F.col("src") + 1).alias("source")

    def detail(keys: DataFrame) -> DataFrame:
        return f.placed.join(keys, SPOT, "left_semi").groupBy(*POSITION).agg(
            F.countDistinct(*VALUE).alias("values"),
            F.slice(F.sort_array(F.collect_set(F.struct(*VALUE, source))), 1, 6).alias("seen"))
    return Finding(f.places.select(*SPOT), SPOT, detail, POSITION)


@checker("nonmonotonic-send")
def nonmonotonic_send(f: Frames) -> Finding:
    """A producer's send in a partition acked at a lower offset than its previous acked send there,
    in the order it sent them (t_invoke, then seq): each place where the offsets go back counts
    once."""
    acked = with_tid(f.sends.filter((F.col("outcome") == "ok") & (F.col("offset") >= 0))).select(
        *VALUE, "tid", "partition", "offset", "t_invoke")
    sent = Window.partitionBy("producer", "tid", "partition").orderBy("t_invoke", "seq")
    reordered = acked.withColumn("prev",
                                 F.lag("offset").over(sent)).filter(F.col("offset") < F.col("prev"))
    return Finding(reordered.select(*VALUE, "partition", "offset", "prev"), VALUE,
                   extent=f.send_extent)


def _poll_steps(f: Frames) -> DataFrame:
    """Live readers' consecutive records per partition, in the order polls returned them, within one
    assignment of that partition: an assign, revoke or lost event of that partition (or of none in
    particular) starts another."""
    moves = f.events.filter(F.col("kind")
                            .isin(Event.ASSIGN.value, Event.REVOKE.value, Event.LOST.value))
    whole = F.coalesce(F.col("partition") < 0, F.lit(True))
    one = moves.filter(~whole).select(F.col("source").alias("reader"), "t", "topic", "partition",
                                      F.lit(1).alias("one"), F.lit(0).alias("every"))
    every = moves.filter(whole).select(F.col("source").alias("reader"), "t",
                                       F.lit(None).cast("string").alias("topic"),
                                       F.lit(None).cast("long").alias("partition"),
                                       F.lit(0).alias("one"), F.lit(1).alias("every"))
    live = f.reads.filter(F.col("phase") == "live").select(
        "reader", "t", "topic", "partition", "poll", "pos", "offset", F.lit(0).alias("one"),
        F.lit(0).alias("every"))
    rows = live.unionByName(one.unionByName(every), allowMissingColumns=True)
    order = ["t", F.desc(F.col("one") + F.col("every")), "poll", "pos", "offset"]
    so_far = Window.unboundedPreceding, Window.currentRow
    by_reader = Window.partitionBy("reader").orderBy(*order).rowsBetween(*so_far)
    by_partition = (Window.partitionBy("reader", "topic", "partition").orderBy(*order)
                    .rowsBetween(*so_far))
    gen = (rows.withColumn("gen_every", F.sum("every").over(by_reader))
           .withColumn("gen_one", F.sum("one").over(by_partition))
           .filter((F.col("one") + F.col("every")) == 0))
    w = (Window.partitionBy("reader", "gen_every", "gen_one", "topic", "partition")
         .orderBy("poll", "pos", "offset"))
    steps = gen.withColumn("prev", F.lag("offset").over(w)).filter(F.col("prev").isNotNull())
    return steps.select("reader", "topic", "partition", "prev", "offset")


def _log_order(f: Frames) -> DataFrame:
    """Each record of the final log with its place in its partition among all records (`r_all`) and
    among those a read_committed reader sees (`r_vis`: not in an aborted or undecided transaction),
    since transaction markers (and compaction) leave offsets that hold no record."""
    w = Window.partitionBy("topic", "partition").orderBy("offset")
    log = (f.ours.filter(F.col("phase") == "final").select(*POSITION, *VALUE)
           .dropDuplicates(POSITION)
           .join(_in_txns(f, (Fate.ABORTED, Fate.UNKNOWN)).withColumn("hidden", F.lit(True)), VALUE,
                 "left")
           .withColumn("r_all", F.row_number().over(w)))
    visible = log.filter(F.col("hidden").isNull()).withColumn("r_vis", F.row_number().over(w))
    return log.join(visible.select(*POSITION, "r_vis"), POSITION, "left").select(
        *POSITION, "r_all", "r_vis")


@checker("poll-skip")
def poll_skip(f: Frames) -> Finding:
    """A live reader's next record in a partition is not the next one in the log as its isolation
    level sees it (judged where both records are in the final log); without transactions, offsets
    are the log's order."""
    # a reader sent on past offsets retention deleted skipped nothing the log still held
    starts = F.broadcast(f.ends.select("topic", "partition", "start"))
    gaps = (_poll_steps(f).filter(F.col("offset") > F.col("prev") + 1)
            .join(starts, ["topic", "partition"], "left")
            .filter(F.coalesce(F.col("offset") > F.col("start"), F.lit(True))).drop("start"))
    if f.facts.transactional:
        places = _log_order(f)
        before = places.withColumnsRenamed({"offset": "prev", "r_all": "p_all", "r_vis": "p_vis"})
        committed = F.col("reader").isin(*f.facts.committed_readers)
        step = F.when(committed,
                      F.col("r_vis") - F.col("p_vis")).otherwise(F.col("r_all") - F.col("p_all"))
        gaps = (gaps.join(before, ["topic", "partition", "prev"], "left")
                .join(places, POSITION, "left")
                .filter(F.coalesce(step > 1, F.lit(False))).select(*gaps.columns))
    return Finding(gaps, ["reader", "partition", "offset"])


@checker("nonmonotonic-poll")
def nonmonotonic_poll(f: Frames) -> Finding:
    steps = _poll_steps(f)
    return Finding(steps.filter(F.col("offset") <= F.col("prev")),
                   ["reader", "partition", "offset"])


def _committed_reads(f: Frames) -> DataFrame:
    """What the live readers held to read_committed read."""
    return f.ours.filter((F.col("phase") == "live") & F.col("reader")
                         .isin(*f.facts.committed_readers))


@checker("aborted-read")
def aborted_read(f: Frames) -> Finding:
    """A value read whose send definitely failed, or that a read_committed reader read from an
    aborted transaction (Jepsen's G1a)."""
    aborted = f.ours.join(f.keys("failed"), VALUE, "left_semi")
    if f.facts.transactional and f.facts.committed_readers:
        aborted = aborted.unionByName(_committed_reads(f)
                                      .join(_in_txns(f, (Fate.ABORTED,)), VALUE, "left_semi"))
    return Finding(aborted.select(*READ_COLS).distinct(), ["reader", "offset"])


@checker("precommitted-read")
def precommitted_read(f: Frames) -> Finding | None:
    """A read_committed reader read a value of a transaction before its producer asked to commit it
    (or of one never asked to commit and not aborted); one without a txns row is not judged, as its
    producer may have asked just before it died."""
    if not (f.facts.transactional and f.facts.committed_readers):
        return None
    txn = (f.fates.filter((F.col("fate") != Fate.ABORTED.value) & F.col("t_commit").isNotNull())
           .select(*VALUE, "txn", "t_commit"))
    early = (_committed_reads(f).join(txn, VALUE)
             .filter((F.col("t_commit") < 0) | (F.col("t") < F.col("t_commit"))))
    return Finding(early.select(*READ_COLS, "txn", "t", "t_commit"), ["reader", "t", "offset"])


@checker("torn-transaction")
def torn_transaction(f: Frames) -> Finding | None:
    """A read_committed reader that reads every partition from the beginning read part of a
    committed transaction and read past the rest of it: one row per (reader, transaction), with the
    values it passed over."""
    readers = [r for r in f.facts.committed_readers if r in f.contiguous]
    if not (f.facts.transactional and readers):
        return None
    reads = _committed_reads(f).filter(F.col("reader").isin(*readers))
    committed = f.fates.filter(F.col("fate") == Fate.COMMITTED.value)
    # reading any value of a transaction is reading part of it; passing one needs its ack offset
    seen = reads.join(committed.select(*VALUE, "txn"), VALUE).select(
        "reader", "producer", "txn").distinct()
    reach = reads.groupBy("reader", "topic", "partition").agg(F.max("offset").alias("reach"))
    passed = (seen.join(committed.filter(F.col("offset") >= 0), ["producer", "txn"])
              .join(reads.select("reader", *VALUE), ["reader", *VALUE], "left_anti")
              .join(reach, ["reader", "topic", "partition"])
              .filter(F.col("reach") > F.col("offset")))
    torn = passed.groupBy("reader", "producer", "txn").agg(
        F.count("*").alias("passed_over"),
        F.slice(F.sort_array(F.collect_list(F.struct("seq", "partition", "offset"))), 1, 5)
        .alias("values"))
    return Finding(torn, ["reader", "producer", "txn"])


@checker("unexpected")
def unexpected(f: Frames) -> Finding:
    """A value read that is not ours, is damaged, or (in a run that got to its drain) no producer
    attempted: a run cut off earlier may have killed producers before they recorded their last
    sends."""
    foreign = f.reads.filter((F.col("producer") < 0) | ~F.col("checksum_ok"))
    never_sent = f.ours.join(f.keys("NOT sent"), VALUE, "left_semi")
    rows = foreign.unionByName(never_sent) if f.facts.drain_ran else foreign
    return Finding(rows.select(*READ_COLS, "checksum_ok"), ["reader", "offset"])


@checker("vanished-read")
def vanished_read(f: Frames) -> Finding:
    """A value a live consumer read that a complete final read lacks (above the log start: below it,
    retention deleted it)."""
    drained = with_tid(f.ends.filter("reached")).select(
        "tid", F.col("partition").alias("read_partition"), "start")
    vanished = f.values.filter("live AND NOT final").join(
        F.broadcast(drained), ["tid", "read_partition"]).filter(
        F.coalesce(F.col("read_offset") >= F.col("start"), F.lit(True)))
    return Finding(vanished.select(*VALUE, F.col("read_partition").alias("partition"),
                                   "first_read_t"), VALUE)


@checker("replica-divergence")
def replica_divergence(f: Frames) -> Finding:
    """Two replicas holding different values at one offset below the high watermark."""
    def detail(keys: DataFrame) -> DataFrame:
        return f.placed.filter(F.col("src") == REPLICA).join(
            keys, SPOT, "left_semi").groupBy(*POSITION).agg(
            F.countDistinct(*VALUE).alias("values"),
            F.sort_array(F.collect_list(F.struct("broker", *VALUE))).alias("replicas"))
    return Finding(f.places.filter("diverged").select(*SPOT), SPOT, detail, POSITION)


@checker("committed-unread")
def committed_unread(f: Frames) -> Finding | None:
    """At-least-once for a group: every record below its partition's final committed offset was read
    by a member. A transaction that did not commit is not owed: a read_committed member skips it."""
    if f.facts.group_commits == "none":
        return None
    committed = f.events.filter(F.col("kind") == Event.COMMITTED.value).select(
        "topic", "partition", F.col("offset").alias("committed"))
    never_live = f.keys("final AND NOT live")
    if f.facts.transactional:
        never_live = never_live.join(_in_txns(f, (Fate.ABORTED, Fate.UNKNOWN)), VALUE, "left_anti")
    skipped = (f.ours.filter(F.col("phase") == "final").join(never_live, VALUE, "left_semi")
               .select(*VALUE, *POSITION).distinct()
               .join(F.broadcast(committed), ["topic", "partition"])
               .filter(F.col("offset") < F.col("committed")))
    return Finding(skipped, POSITION)


@checker("eos-duplicate")
def eos_duplicate(f: Frames) -> Finding | None:
    """An input record whose copy the read_committed drain of the eos-copy output found at more than
    one offset."""
    if f.copied is None:
        return None
    twice = f.copied.groupBy("in_partition", "in_offset").agg(
        F.countDistinct("partition", "offset").alias("copies"),
        F.slice(F.sort_array(F.collect_set(F.struct("partition", "offset"))), 1, 5).alias("at"))
    return Finding(twice.filter(F.col("copies") > 1), ["in_partition", "in_offset"])


@checker("eos-loss")
def eos_loss(f: Frames) -> Finding | None:
    """An input record (of the stage's input topic) below the eos-copy group's final committed
    offset of its partition (so the stage says it is done) without a copy in the output as the
    read_committed drain read it."""
    if f.copied is None:
        return None
    inputs = (f.ours.filter((F.col("phase") == "final") & (F.col("topic") == f.copy_input))
              .select("partition", "offset", *VALUE).dropDuplicates(["partition", "offset"]))
    # the stage reads with read_committed: what never committed is not its to copy
    if f.facts.transactional:
        inputs = inputs.join(_in_txns(f, (Fate.ABORTED, Fate.UNKNOWN)), VALUE, "left_anti")
    committed = f.events.filter(F.col("kind") == Event.COPY_COMMITTED.value).select(
        "partition", F.col("offset").alias("committed"))
    copies = f.copied.select(F.col("in_partition").alias("partition"),
                             F.col("in_offset").alias("offset"))
    lost = (inputs.join(F.broadcast(committed), "partition")
            .filter(F.col("offset") < F.col("committed"))
            .join(copies, ["partition", "offset"], "left_anti"))
    return Finding(lost, ["partition", "offset"])


@checker("metadata-lost")
def metadata_lost(f: Frames) -> Finding:
    """An entry of the cluster's metadata a `migrate` op read before it began and not once it
    ended (harness.inventory: topics, replicas, topic configs, SCRAM users)."""
    said = F.from_json("detail", "inventory struct<before: array<string>, after: array<string>>")
    lost = f.faults.filter(F.col("fault") == "migrate").select(
        "t_start", F.explode(F.array_except(said.inventory.before, said.inventory.after))
        .alias("entry"))
    return Finding(lost, ["t_start", "entry"])


# the share group's checkers come last, as their anomalies do
from reports import share_checks  # noqa: E402, F401

if tuple(CHECKERS) != ANOMALIES:
    raise ImportError(f"checkers {tuple(CHECKERS)} are not contracts.anomalies' {ANOMALIES}")
