"""When retention deleted a record, as the history can bound it: the sampler's first log start past
it, and the log's end offset then (tiered topics; the drain's end otherwise)."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from contracts.history import Event
from reports.frames import VALUE, Frames, with_tid


def when_gone(f: Frames, gone: DataFrame, acked: DataFrame) -> DataFrame:
    """`gone` with `t_gone`, the first time the sampler saw its partition's log start past it (else
    the drain's end), and `end_then`, a bound on the log's end offset then: a record sent after
    t_gone was appended after it, so the least offset of one bounds the end, as does the drain's."""
    moves = with_tid(f.events.filter(F.col("kind") == Event.LOG_START.value)).select(
        "tid", "partition", F.col("offset").alias("moved_to"), F.col("t").alias("t_moved"))
    first = (gone.join(F.broadcast(moves), ["tid", "partition"])
             .filter(F.col("moved_to") > F.col("offset"))
             .groupBy(*VALUE).agg(F.min("t_moved").alias("t_moved")))
    timed = gone.join(first, VALUE, "left").withColumn(
        "t_gone", F.coalesce("t_moved", "t_start"))
    at = timed.select("tid", "partition", "t_gone").distinct()
    later = (at.join(acked.select("tid", "partition", "t_invoke", F.col("offset").alias("o")),
                     ["tid", "partition"])
             .filter(F.col("t_invoke") > F.col("t_gone"))
             .groupBy("tid", "partition", "t_gone").agg(F.min("o").alias("sent_after")))
    return timed.join(later, ["tid", "partition", "t_gone"], "left").withColumn(
        "end_then", F.least(F.col("end"), F.coalesce(F.col("sent_after"), F.col("end"))))
