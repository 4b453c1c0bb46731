"""Entry points the analysis benchmark runs in subprocesses: `python -m bench.engines spark|pandas DIR`."""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main() -> None:
    """Print one engine's anomaly counts of a history; each engine imports only its own stack, so the other's
    libraries never count in its measured memory."""
    engine, history = sys.argv[1], Path(sys.argv[2])
    if engine == "spark":
        from reports.analysis import analyze, is_large
        from reports.spark import session

        counts = analyze(session(large=is_large(history)), history).counts()  # the product's own settings
    else:
        from bench.pandas_checks import check

        counts = check(history)["counts"]
    print(json.dumps(counts))


if __name__ == "__main__":
    main()
