"""`python -m reports.archive_train ARCHIVE`: the process whose Spark driver JVM dumps the class
archive."""

from __future__ import annotations

import sys
from pathlib import Path

from reports.class_archive import BUILD_TIMEOUT_S
from reports.spark import SHORT_JOBS, session
from reports.warmup import analyze_small


def train(archive: Path) -> None:
    """Analyze a small synthetic history in a JVM that writes `archive` when it exits; wait for that
    exit."""
    spark = session(java_options=f"{SHORT_JOBS} -XX:ArchiveClassesAtExit={archive}")
    analyze_small(spark)
    # the JVM exits at end of input, dumping the archive first
    jvm = spark.sparkContext._gateway.proc
    spark.stop()
    jvm.stdin.close()
    jvm.wait(timeout=BUILD_TIMEOUT_S)


if __name__ == "__main__":
    train(Path(sys.argv[1]))
