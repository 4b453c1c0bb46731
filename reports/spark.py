"""The Spark session the analyzer runs on: local[*] by default, or a real cluster by master URL."""

from __future__ import annotations

import atexit
import concurrent.futures as cf
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from pyspark import SparkConf, SparkContext
from pyspark.errors import PySparkRuntimeError
from pyspark.java_gateway import launch_gateway
from pyspark.sql import SparkSession

from reports import class_archive

A = TypeVar("A")
B = TypeVar("B")


def side_by_side(first: Callable[[], A], second: Callable[[], B]) -> tuple[A, B]:
    """Both calls' results, `second` made on a thread of its own meanwhile: their Spark jobs run
    together, where a small history's job alone leaves a core idle."""
    with cf.ThreadPoolExecutor(1, thread_name_prefix="side-by-side") as pool:
        later = pool.submit(second)
        return first(), later.result()


# A run's analysis is many short jobs, done sooner by C1 alone; a history of millions of sends is a
# few long jobs that C2 and the parallel collector pay back (BENCHMARKS.md).
# many analyses in one JVM fill 48 MB
SHORT_JOBS = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m"
LONG_JOBS = "-XX:+UseParallelGC"
# An analysis compiles about 260 generated classes; Spark's cache of 100 evicts them before the next
# analysis in the same JVM (a run's, after its warm-up; a suite's) can use them
CODEGEN_CACHE = "1000"
# errors only: the console is kafka-chaos's
LOG_CONFIG = Path(__file__).parent / "log4j2.properties"


class JvmOutput:
    """Where the Spark JVM's stdout and stderr go instead of the console: a file of this process,
    from which each analysis takes what was written since the last one into its run's logs/."""

    def __init__(self) -> None:
        fd, name = tempfile.mkstemp(prefix="kchaos-spark-", suffix=".log")
        self.file = os.fdopen(fd, "ab")
        self.path = Path(name)
        self._taken = 0
        atexit.register(self.path.unlink, missing_ok=True)

    def take(self, dest: Path) -> None:
        """Append what the JVM wrote since the last call to `dest` (e.g. a run's logs/spark.log)."""
        with self.path.open("rb") as src:
            src.seek(self._taken)
            text = src.read()
        self._taken += len(text)
        if text:
            dest.parent.mkdir(parents=True, exist_ok=True)
            with dest.open("ab") as out:
                out.write(text)


    def tail(self, lines: int = 5) -> str:
        """The last lines the JVM wrote, one string (why it did not start, say)."""
        return " | ".join(self.path.read_text(errors="replace").strip().splitlines()[-lines:])


OUTPUT: JvmOutput | None = None


def _start(conf: SparkConf) -> SparkSession:
    """A session whose JVM writes its stdout and stderr to OUTPUT, not to the console (the running
    one, if any; a stopped one's JVM is reused)."""
    global OUTPUT
    if SparkContext._active_spark_context is None:
        gateway = None
        if SparkContext._gateway is None:
            OUTPUT = OUTPUT or JvmOutput()
            gateway = launch_gateway(conf,
                                     popen_kwargs={"stdout": OUTPUT.file, "stderr": OUTPUT.file})
        SparkContext(conf=conf, gateway=gateway)
    return SparkSession.builder.getOrCreate()


def session(master: str | None = None, driver_memory: str | None = None, large: bool = False,
            java_options: str | None = None) -> SparkSession:
    """A quiet Spark session sized for this machine; `master` e.g. spark://127.0.0.1:7077. `large`:
    it will analyze a history of millions of sends (its JIT compiler is chosen for that when the JVM
    starts). `java_options` replace the driver JVM's (default: as `large` says, with the class
    archive once built)."""
    # never bind or advertise a non-loopback address
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    archive = class_archive.option()
    if java_options is None:
        java_options = os.environ.get("KCHAOS_SPARK_JAVA_OPTIONS",
                                      f"{LONG_JOBS if large else SHORT_JOBS} {archive}".strip())
    java_options = f"{java_options} -Dlog4j2.configurationFile=file:{LOG_CONFIG}"
    conf = (SparkConf().setAppName("kafka-chaos")
            .setMaster(master or os.environ.get("KCHAOS_SPARK_MASTER", "local[*]"))
            .setAll([("spark.driver.memory",
                      driver_memory or os.environ.get("KCHAOS_SPARK_MEMORY", "4g")),
                     ("spark.sql.shuffle.partitions",
                      os.environ.get("KCHAOS_SPARK_PARTITIONS", "8")),
                     ("spark.sql.adaptive.enabled", "true"),
                     ("spark.ui.enabled", "false"),
                     ("spark.ui.showConsoleProgress", "false"),
                     ("spark.driver.bindAddress", "127.0.0.1"),
                     ("spark.driver.host", "127.0.0.1"),
                     ("spark.sql.session.timeZone", "UTC"),
                     ("spark.sql.codegen.cache.maxEntries", CODEGEN_CACHE),
                     # the charts' frames as Arrow batches
                     ("spark.sql.execution.arrow.pyspark.enabled", "true"),
                     ("spark.driver.extraJavaOptions", java_options)]))
    # a directory: Spark's event log, for bench.profile
    if event_log := os.environ.get("KCHAOS_SPARK_EVENT_LOG"):
        conf.setAll([("spark.eventLog.enabled", "true"), ("spark.eventLog.dir", event_log),
                     ("spark.eventLog.compress", "false"),
                     ("spark.eventLog.rolling.enabled", "false")])
    try:
        spark = _start(conf)
    except PySparkRuntimeError as exc:
        if not archive or archive not in java_options:
            raise RuntimeError(f"{exc}; the Spark JVM said: "
                               f"{OUTPUT.tail() if OUTPUT else 'nothing'}") from exc
        # a JVM that cannot use the archive: drop it, start without
        class_archive.path().unlink(missing_ok=True)
        spark = _start(conf.set("spark.driver.extraJavaOptions", java_options.replace(archive, "")))
    spark.sparkContext.setLogLevel("ERROR")
    return spark
