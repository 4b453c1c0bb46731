"""Where kafka-chaos keeps what it builds once (jars, images' contexts, the Spark class archive)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """Where jars and build contexts are kept between runs."""
    return Path(os.environ.get("KCHAOS_CACHE", Path.home() / ".cache" / "kafka-chaos"))
