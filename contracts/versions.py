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


def release(version: str) -> tuple[int, ...]:
    """A version as numbers, for comparisons ('3.9.2' -> (3, 9, 2)); a part that is not a number counts as 0."""
    return tuple(int(x) if x.isdigit() else 0 for x in version.split("."))


def transaction_defense(version: str) -> str:
    """What KIP-890 (Transactions Server-Side Defense) does for transactions on this version."""
    if release(version) >= (4, 0):
        return ("KIP-890 on (Kafka 4.0+: part 1 verifies a partition's transaction before it takes a write; part 2, "
                "transaction.version=2, bumps the producer epoch per transaction for clients that speak it)")
    if release(version) >= (3, 6):
        return ("KIP-890 part 1 (Kafka 3.6+): a partition verifies the producer's transaction is ongoing before it "
                "takes a write; no per-transaction epoch bump (part 2 is 4.0)")
    return ("before KIP-890 (Kafka < 3.6): a delayed write can land after its transaction ended and join or hang a "
            "later one")
