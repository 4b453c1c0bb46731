"""The share group's indexes (KIP-932): every delivery of one of our records with its
acknowledgement's fate, and each share-partition's final state."""

from __future__ import annotations

import json
from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from contracts.history import Event
from contracts.results import Facts
from contracts.share import Ack, AckOutcome

POS = ["topic", "partition", "offset"]


@dataclass
class ShareFrames:
    """`deliveries`: each record a member processed, its delivery count and acknowledgement,
    `sent` (the acknowledgement went out) and `t_ok` (when the broker confirmed it; null: never).
    `states`: each share-partition's final start offset, lag (-1: not known) and delivery limit;
    `acks`: the `share_acks` rows."""

    deliveries: DataFrame
    states: DataFrame
    acks: DataFrame

    def done(self) -> DataFrame:
        """Positions some member accepted or rejected, or saw delivered at the delivery limit."""
        sent = self.deliveries.filter(F.col("sent") & F.col("ack").isin(Ack.ACCEPT, Ack.REJECT))
        at_limit = self.deliveries.join(F.broadcast(self.states.select("topic", "partition",
                                                                       "limit")),
                                        ["topic", "partition"]).filter(
            F.col("delivery") >= F.col("limit"))
        return sent.select(*POS).unionByName(at_limit.select(*POS)).distinct()

    def per_second(self, t0: int) -> tuple[DataFrame, DataFrame]:
        """For the timeline, per member and second since t0: deliveries and deliveries after the
        first; and the acknowledgement commits that failed."""
        second = ((F.col("t") - t0) / 1e9).cast("long").alias("s")
        handed = self.deliveries.groupBy("reader", second).agg(
            F.count("*").alias("n"), F.sum((F.col("delivery") > 1).cast("int")).alias("again"))
        failed = self.acks.filter(F.col("outcome") == AckOutcome.FAIL.value).groupBy(
            "reader", second).count()
        return handed, failed

    def metrics(self) -> dict[str, int]:
        """Deliveries, records, records delivered more than once and how many of those a member
        had released (contracts.results.ShareDeliveries)."""
        released = (F.col("ack") == Ack.RELEASE.value) & F.col("sent")
        per = self.deliveries.groupBy(*POS).agg(
            F.count("*").alias("n"), F.max(released.cast("int")).alias("released"))
        row = per.agg(F.sum("n").alias("deliveries"), F.count("*").alias("records"),
                      F.sum((F.col("n") > 1).cast("int")).alias("again"),
                      F.sum(((F.col("n") > 1) & (F.col("released") == 1)).cast("int"))
                      .alias("released")).first()
        return {k: int(row[k] or 0) for k in ("deliveries", "records", "again", "released")}


def _states(events: DataFrame, facts: Facts) -> DataFrame:
    """The `share-start` rows as a small frame; facts.share_state says whether they are whole."""
    rows = events.filter(F.col("kind") == Event.SHARE_START.value).collect()
    known = [r for r in rows if r["partition"] >= 0]
    parsed = [(r["topic"], r["partition"], r["offset"], *_lag_and_limit(r["detail"]))
              for r in known]
    facts.share_state = ("known" if known and len(known) == len(rows)
                         and all(lag >= 0 for *_, lag, _ in parsed) else "unknown")
    facts.share_lag = sum(max(lag, 0) for *_, lag, _ in parsed)
    return events.sparkSession.createDataFrame(
        parsed, "topic string, partition long, start long, lag long, limit long")


def _lag_and_limit(detail: str | None) -> tuple[int, int]:
    d = json.loads(detail or "{}")
    return int(d.get("lag", -1)), int(d.get("limit", 0))


def share_frames(shares: DataFrame, acks: DataFrame, events: DataFrame,
                 facts: Facts) -> ShareFrames | None:
    """The indexes of a share run's history; None for a history without share rows or states."""
    if not shares.limit(1).count() and not events.filter(
            F.col("kind") == Event.SHARE_START.value).limit(1).count():
        return None
    sent = (acks.filter(F.col("outcome") == AckOutcome.SENT.value).select("reader", "poll")
            .distinct().withColumn("sent", F.lit(True)))
    # a partition one of whose records could not be marked is not confirmed whole
    keys = ["reader", "poll", "topic", "partition"]
    failed = acks.filter((F.col("outcome") == AckOutcome.FAIL.value) & (F.col("partition") >= 0))
    ok = (acks.filter(F.col("outcome") == AckOutcome.OK.value).join(failed, keys, "left_anti")
          .groupBy(*keys).agg(F.min("t").alias("t_ok")))
    ours = shares.filter((F.col("producer") >= 0) & F.col("checksum_ok"))
    phases = {r["phase"]: r["count"] for r in ours.groupBy("phase").count().collect()}
    facts.share_live, facts.share_final = phases.get("live", 0), phases.get("final", 0)
    deliveries = (ours.join(sent, ["reader", "poll"], "left")
                  .join(ok, keys, "left")
                  .withColumn("sent", F.coalesce("sent", F.lit(False))))
    return ShareFrames(deliveries.localCheckpoint(), _states(events, facts), acks)
