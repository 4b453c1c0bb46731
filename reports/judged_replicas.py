"""Which replica records the checkers judge: those below the high watermark the drain saw, on the
brokers in their partition's last sampled ISR. Above the one, or on a broker left out of the other,
a replica may still truncate what it holds, as it catches up."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F


def judged(replicas: DataFrame, ends: DataFrame, metadata: DataFrame) -> DataFrame:
    """`replicas`' records of a value (producer >= 0) below their partition's drain end and on a
    broker in its last sampled ISR; with no end, or no ISR sampled, that bound is left off."""
    last = metadata.groupBy("topic", "partition").agg(F.max_by("isr", "t").alias("isr"))
    isr = last.filter(F.col("isr") != "").select(
        "topic", "partition", F.split("isr", ",").cast("array<long>").alias("isr"))
    return (replicas.filter(F.col("producer") >= 0)
            .join(F.broadcast(ends.select("topic", "partition", "end")), ["topic", "partition"],
                  "left")
            .filter(F.col("end").isNull() | (F.col("offset") < F.col("end")))
            .join(F.broadcast(isr), ["topic", "partition"], "left")
            .filter(F.col("isr").isNull()
                    | F.array_contains("isr", F.col("broker").cast("long")))
            .drop("isr"))
