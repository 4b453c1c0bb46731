"""Entry points the analysis benchmark runs in subprocesses: `python -m bench.engines spark|pandas|spark-twice DIR`
(spark-twice: the same analysis twice in one JVM, printing both times)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path


def main() -> None:
    """Print one engine's anomaly counts of a history; each engine imports only its own stack, so the other's
    libraries never count in its measured memory."""
    engine, history = sys.argv[1], Path(sys.argv[2])
    if engine == "spark":
        from reports.analysis import analyze, is_large
        from reports.spark import session

        counts = analyze(session(large=is_large(history)), history).counts()  # the product's own settings
    elif engine == "spark-twice":
        from reports.analysis import analyze, is_large
        from reports.spark import session

        spark, seconds = session(large=is_large(history)), []
        for _ in range(2):
            t0 = time.monotonic()
            counts = analyze(spark, history).counts()
            seconds.append(round(time.monotonic() - t0, 1))
        counts = {"seconds": seconds, **counts}
    else:
        from bench.pandas_checks import check

        counts = check(history)["counts"]
    print(json.dumps(counts))


if __name__ == "__main__":
    main()
