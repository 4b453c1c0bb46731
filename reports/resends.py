"""Duplicates a producer made itself: values librdkafka re-sent under a bumped producer epoch after
it had written them, which no broker can recognise as copies. The checkers count them apart from
the duplicates Kafka's idempotence forbids."""

from __future__ import annotations

from dataclasses import dataclass
from weakref import WeakKeyDictionary

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from reports.frames import VALUE, Frames


@dataclass(frozen=True)
class Resends:
    """The values a producer re-sent itself: after a timeout, or else under a new epoch."""

    at_timeout: DataFrame
    under_new_epoch: DataFrame


_FOUND: WeakKeyDictionary[Frames, Resends] = WeakKeyDictionary()


def of(f: Frames) -> Resends:
    """The re-sent values of `f`, built once for the three checkers that read them."""
    if f not in _FOUND:
        timeout = at_timeout(f)
        _FOUND[f] = Resends(timeout, under_new_epochs(f).join(timeout, VALUE, "left_anti"))
    return _FOUND[f]


def at_timeout(f: Frames) -> DataFrame:
    """The values at more than one position that their producer was still awaiting when one of its
    messages timed out (_MSG_TIMED_OUT): librdkafka then bumps the producer's epoch and re-sends
    what was unacknowledged, which the broker cannot de-duplicate. Only the duplicated values are
    matched with the timeouts."""
    timeouts = f.sends.filter((F.col("outcome") == "info")
                              & (F.col("error") == "_MSG_TIMED_OUT")).select(
        "producer", F.col("t_complete").alias("t"), F.col("t_complete").alias("t_out"))
    awaited = f.sends.join(f.keys("moved"), VALUE, "left_semi").select(
        *VALUE, F.col("t_invoke").alias("t"), "t_complete")
    # each awaited value against its producer's first timeout at or after its send: a running
    # minimum from the latest time back (a join of every value with every timeout, or a frame to the
    # end, is quadratic)
    later = Window.partitionBy("producer").orderBy(
        F.desc("t"), F.col("t_out").isNull()).rowsBetween(
        Window.unboundedPreceding, Window.currentRow)
    return (awaited.unionByName(timeouts, allowMissingColumns=True)
            .withColumn("next_out", F.min("t_out").over(later))
            .filter(F.col("seq").isNotNull() & F.col("next_out").isNotNull()
                    & F.coalesce(F.col("t_complete") >= F.col("next_out"), F.lit(True)))
            .select(*VALUE).distinct())


def under_new_epochs(f: Frames) -> DataFrame:
    """The values at more than one position, each position in the replicas under its own epoch of
    one producer id that no other producer of the run wrote under, their ack's position among them:
    the client bumped its epoch and re-sent a value the log already held (after an out-of-order
    sequence, say). A producer id two producers share is Kafka's fault, and stays a duplicate."""
    copies = f.replicas.join(f.keys("moved"), VALUE, "left_semi").localCheckpoint(eager=False)
    ids = copies.select("producer_id").distinct()
    shared = (f.replicas.join(F.broadcast(ids), "producer_id", "left_semi")
              .groupBy("producer_id").agg(F.countDistinct("producer").alias("owners"))
              .filter(F.col("owners") > 1).select("producer_id"))
    per_value = copies.join(shared, "producer_id", "left_anti").groupBy(*VALUE).agg(
        F.countDistinct("producer_id").alias("ids"),
        F.countDistinct("producer_epoch").alias("epochs"),
        F.countDistinct("topic", "partition", "offset").alias("at"),
        F.collect_set(F.struct("partition", "offset")).alias("spots"),
        F.max(F.col("producer_id").isNull() | F.col("producer_epoch").isNull()).alias("unknown"))
    acked = f.values.filter("moved").select(*VALUE, F.struct("partition", "offset").alias("ack"))
    return (per_value.join(acked, VALUE)
            .filter((F.col("ids") == 1) & (F.col("epochs") == F.col("at")) & (F.col("at") > 1)
                    & ~F.col("unknown") & F.expr("array_contains(spots, ack)"))
            .select(*VALUE))
