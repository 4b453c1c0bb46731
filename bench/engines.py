"""Entry points the analysis benchmark runs in subprocesses: `python -m bench.engines
spark|pandas|spark-twice| spark-results DIR` (spark-twice: the same analysis twice in one JVM,
printing both times; spark-results: every anomaly's count, examples and span and the metrics, on the
master KCHAOS_SPARK_MASTER names)."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict
from pathlib import Path


def main() -> None:
    """Print one engine's anomaly counts of a history; each engine imports only its own stack, so
    the other's libraries never count in its measured memory."""
    engine, history = sys.argv[1], Path(sys.argv[2])
    if engine.startswith("spark"):
        from reports.analysis import analyze, is_large
        from reports.spark import session

        spark, seconds = session(large=is_large(history)), []  # the product's own settings
        for _ in range(2 if engine == "spark-twice" else 1):
            t0 = time.monotonic()
            a = analyze(spark, history)
            seconds.append(round(time.monotonic() - t0, 1))
        out: dict = a.counts()
        if engine == "spark-twice":
            out = {"seconds": seconds, **out}
        elif engine == "spark-results":
            out = {"master": spark.sparkContext.master,
                   "anomalies": {k: asdict(x) for k, x in a.anomalies.items()},
                   "metrics": a.metrics}
    else:
        from bench.pandas_checks import check

        out = check(history)["counts"]
    print(json.dumps(out, default=str))


if __name__ == "__main__":
    main()
