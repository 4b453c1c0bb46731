"""The remote tier the brokers share: Kafka's LocalTieredStorage on a host directory, read as the
segments it holds."""

from __future__ import annotations

import re
from pathlib import Path

from contracts.history import RemoteSegment

ROOT = "kafka-tiered-storage"  # LocalTieredStorage's directory under its `dir`
PARTITION_DIR = re.compile(r"^(?P<topic>[a-zA-Z0-9._-]+)-(?P<partition>\d+)-[a-zA-Z0-9_-]{22}$")
SEGMENT_FILE = re.compile(r"^(?P<base>\d+)-(?P<segment>[a-zA-Z0-9_-]{22})\.log$")


def segments(shared: Path, topics: set[str]) -> list[RemoteSegment]:
    """The segments of `topics` the remote tier holds now (a file deleted while it is listed is
    left out)."""
    found = []
    root = shared / ROOT
    for part in root.iterdir() if root.is_dir() else ():
        p = PARTITION_DIR.match(part.name)
        if not p or p["topic"] not in topics:
            continue
        for f in part.iterdir():
            s = SEGMENT_FILE.match(f.name)
            try:
                size = f.stat().st_size if s else -1
            except FileNotFoundError:
                continue
            if s:
                found.append(RemoteSegment(p["topic"], int(p["partition"]), int(s["base"]),
                                           s["segment"], size))
    return found
