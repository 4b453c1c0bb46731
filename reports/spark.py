"""The Spark session the analyzer runs on: local[*] by default, or a real cluster by master URL."""

from __future__ import annotations

import os
from pathlib import Path

from pyspark.errors import PySparkRuntimeError
from pyspark.sql import SparkSession

from reports import class_archive

# A run's analysis is many short jobs, done sooner by C1 alone; a history of millions of sends is a few long jobs
# that C2 and the parallel collector pay back (BENCHMARKS.md).
SHORT_JOBS = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m"  # many analyses in one JVM fill 48 MB
LONG_JOBS = "-XX:+UseParallelGC"
LOG_CONFIG = Path(__file__).parent / "log4j2.properties"  # errors only: the console is kafka-chaos's


def session(master: str | None = None, driver_memory: str | None = None, large: bool = False,
            java_options: str | None = None) -> SparkSession:
    """A quiet Spark session sized for this machine; `master` e.g. spark://127.0.0.1:7077. `large`: it will
    analyze a history of millions of sends (its JIT compiler is chosen for that when the JVM starts).
    `java_options` replace the driver JVM's (default: as `large` says, with the class archive once built)."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # never bind or advertise a non-loopback address
    archive = class_archive.option()
    if java_options is None:
        java_options = os.environ.get("KCHAOS_SPARK_JAVA_OPTIONS",
                                      f"{LONG_JOBS if large else SHORT_JOBS} {archive}".strip())
    java_options = f"{java_options} -Dlog4j2.configurationFile=file:{LOG_CONFIG}"
    builder = (SparkSession.builder.appName("kafka-chaos")
               .master(master or os.environ.get("KCHAOS_SPARK_MASTER", "local[*]"))
               .config("spark.driver.memory", driver_memory or os.environ.get("KCHAOS_SPARK_MEMORY", "4g"))
               .config("spark.sql.shuffle.partitions", os.environ.get("KCHAOS_SPARK_PARTITIONS", "8"))
               .config("spark.sql.adaptive.enabled", "true")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.driver.host", "127.0.0.1")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.driver.extraJavaOptions", java_options))
    try:
        spark = builder.getOrCreate()
    except PySparkRuntimeError:
        if not archive or archive not in java_options:
            raise
        class_archive.path().unlink(missing_ok=True)  # a JVM that cannot use the archive: drop it, start without
        spark = builder.config("spark.driver.extraJavaOptions", java_options.replace(archive, "")).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
