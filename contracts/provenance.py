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
    outside docs/ ("unknown" outside a git checkout)."""
    return commit_of(Path(__file__).resolve().parents[1])


def commit_of(top: Path) -> str:
    """The commit checked out at top; results kept under docs/ do not make it '+dirty'."""
    git = ["git", "-C", str(top)]
    try:
        head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10)
        dirty = subprocess.run([*git, "status", "--porcelain", "--untracked-files=no", "--",
                                ".", ":(exclude)docs"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    if head.returncode != 0:
        return "unknown"
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
