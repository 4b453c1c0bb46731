"""Reading results needs no Spark: the results contract and what reads it (console, JUnit, report,
comparison and its merge) import neither pyspark nor the checkers."""

from __future__ import annotations

import subprocess
import sys

READERS = ["contracts.results", "kchaos.console", "kchaos.matrix", "reports.render",
           "reports.compare"]


def test_reading_results_imports_no_spark_and_no_checker():
    done = subprocess.run([sys.executable, "-X", "importtime", "-c",
                           f"import {', '.join(READERS)}"],
                          capture_output=True, text=True, check=True)
    loaded = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if "|" in line}
    heavy = sorted(m for m in loaded if m.split(".")[0] == "pyspark"
                   or m in ("reports.checkers", "reports.frames"))
    assert not heavy and set(READERS) <= loaded, heavy
