"""Which kafka-chaos made a result: the package's version and, in a git checkout, its commit."""

from __future__ import annotations

import subprocess
from functools import cache
from importlib import metadata
from pathlib import Path


@cache
def version() -> str:
    """The installed kafka-chaos version ("unknown" when it is not installed as a package)."""
    try:
        return metadata.version("kafka-chaos")
    except metadata.PackageNotFoundError:
        return "unknown"


@cache
def commit() -> str:
    """The commit of the checkout kafka-chaos runs from, with '+dirty' for uncommitted changes
    ("unknown" outside a git checkout)."""
    top = Path(__file__).resolve().parents[1]
    try:
        head = subprocess.run(["git", "-C", str(top), "rev-parse", "HEAD"], capture_output=True,
                              text=True, timeout=10)
        dirty = subprocess.run(["git", "-C", str(top), "status", "--porcelain",
                                "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    if head.returncode != 0:
        return "unknown"
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
