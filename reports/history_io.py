"""Load a run's history tables into Spark, from Parquet (compacted) or JSON Lines (a run still going
or killed)."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, LongType, StringType, StructField, StructType

from contracts.history import TABLES, jsonl_files

SPARK_TYPES = {"int": LongType(), "str": StringType(), "bool": BooleanType()}
# A row missing any of these is a torn line from a killed writer, not data.
REQUIRED = {"sends": ("producer", "seq", "outcome"), "reads": ("reader", "offset"),
            "faults": ("t_start", "fault"), "metadata": ("t", "partition"),
            "replicas": ("broker", "offset"), "events": ("t", "kind"),
            "txns": ("producer", "txn", "fate"), "copies": ("copier", "in_partition", "in_offset"),
            "copy_txns": ("copier", "txn", "fate"), "shares": ("reader", "offset"),
            "share_acks": ("reader", "poll", "outcome")}


def schema(table: str) -> StructType:
    return StructType([StructField(c, SPARK_TYPES[k], True) for c, k in TABLES[table]])


def literal(path: Path) -> str:
    """A path Spark reads as it is: Hadoop expands glob characters, and matrix runs live in
    `name[k=v]/`."""
    return re.sub(r"([\\\[\]{}*?])", r"\\\1", str(path))


def load(spark: SparkSession, history: Path, table: str) -> DataFrame:
    """One table as a DataFrame (empty with the right schema when the run never wrote it)."""
    parquet = history / f"{table}.parquet"
    jsonl = [literal(f) for f in jsonl_files(history, table) if f.stat().st_size > 0]
    if parquet.exists():
        df = spark.read.schema(schema(table)).parquet(literal(parquet))
    elif jsonl:
        df = spark.read.schema(schema(table)).option("mode", "PERMISSIVE").json(jsonl)
    else:
        return spark.createDataFrame([], schema(table))
    for col in REQUIRED[table]:
        df = df.filter(F.col(col).isNotNull())
    return df


def load_all(spark: SparkSession, history: Path) -> dict[str, DataFrame]:
    return {t: load(spark, history, t) for t in TABLES}


def sends_in(history: Path) -> int:
    """Rows of a compacted sends table from its Parquet footer (0 for JSON Lines: a run killed
    half-way)."""
    sends = history / "sends.parquet"
    return pq.read_metadata(sends).num_rows if sends.is_file() else 0
