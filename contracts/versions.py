"""Kafka versions the harness knows, and the rules that depend on a version alone."""

from __future__ import annotations

import re

DEFAULT_VERSION = "4.3.1"
SUPPORTED_VERSIONS = ("4.3.1", "3.9.2")
VERSION_RE = re.compile(r"^\d+\.\d+\.\d+$")
NO_ZOOKEEPER = "ZooKeeper mode was removed in Kafka 4.0"


def major(version: str) -> int:
    """The major number of a Kafka version string."""
    return int(version.split(".")[0])


def has_zookeeper(version: str) -> bool:
    """Whether a version can run in ZooKeeper mode (every version before 4.0)."""
    head = version.split(".")[0]
    return not head.isdigit() or int(head) < 4
