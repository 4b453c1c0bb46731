"""Kafka versions the harness knows, and the rules that depend on a version alone."""

from __future__ import annotations

import re
from typing import Literal, get_args

DEFAULT_VERSION = "4.4.0"
SUPPORTED_VERSIONS = ("4.4.0", "3.9.2")
VERSION_RE = re.compile(r"^\d+\.\d+\.\d+(\.\d+)?$")
NO_ZOOKEEPER = "ZooKeeper mode was removed in Kafka 4.0"
# The oldest release the harness starts: named listeners (KIP-103) and the clients' ApiVersions came
# with 0.10.2.
OLDEST = (0, 10, 2)
# KRaft is production-ready from 3.3 (KIP-833); earlier releases run in ZooKeeper mode.
KRAFT_FROM = (3, 3)
# Tiered storage (KIP-405): early access from 3.6, production-ready from 3.9.
TIERED_FROM = (3, 6)
# Share groups (KIP-932): early access in 4.0, a preview in 4.1, production-ready from 4.2.
SHARE_FROM = (4, 2)
# Dynamic KRaft quorums, whose controllers are added and removed while it runs (KIP-853)
DYNAMIC_QUORUM_FROM = (3, 9)
# Transactions v2 (KIP-890 part 2): servers enable transaction.version=2, Java producers speak it
TXN_V2_FROM = (4, 0)
# the oldest kafka-clients the Java worker (workloads/java) compiles against
JAVA_CLIENT_FROM = (3, 0)
Metadata = Literal["kraft", "zookeeper"]  # the metadata modes a cluster runs in
METADATA_MODES: tuple[str, ...] = get_args(Metadata)


def major(version: str) -> int:
    """The major number of a Kafka version string."""
    return int(version.split(".")[0])


def has_zookeeper(version: str) -> bool:
    """Whether a version can run in ZooKeeper mode (every version before 4.0)."""
    head = version.split(".")[0]
    return not head.isdigit() or int(head) < 4


def release(version: str) -> tuple[int, ...]:
    """A version as numbers, for comparisons ('3.9.2' -> (3, 9, 2)); a part that is not a number
    counts as 0."""
    return tuple(int(x) if x.isdigit() else 0 for x in version.split("."))


def transaction_defense(version: str, java_client: str | None = None) -> str:
    """What KIP-890 (Transactions Server-Side Defense) does for transactions on this version, with
    producers on librdkafka (None) or on the Java kafka-clients of `java_client`."""
    if release(version) >= TXN_V2_FROM:
        lacks = (f"kafka-clients {java_client} predates it" if java_client else
                 "librdkafka has no KIP-890 (confluentinc/librdkafka#5423)")
        speaks = ("this run's Java producers (kafka-clients 4.0+) speak it" if java_client
                  and release(java_client) >= TXN_V2_FROM
                  else f"this run's producers do not speak it: {lacks}")
        return ("KIP-890 on (Kafka 4.0+: part 1 verifies a partition's transaction before it takes "
                "a write; part 2, transaction.version=2, bumps the producer epoch per transaction; "
                f"{speaks})")
    if release(version) >= (3, 6):
        return ("KIP-890 part 1 (Kafka 3.6+): a partition verifies the producer's transaction is "
                "ongoing before it takes a write; no per-transaction epoch bump (part 2 is 4.0)")
    return ("before KIP-890 (Kafka < 3.6): a delayed write can land after its transaction ended "
            "and join or hang a later one")


def java_for(version: str) -> int:
    """The newest JRE a Kafka version is built and tested with (its README and ops docs): 17 from
    3.1, 11 from 2.1 (KAFKA-7264), 8 before."""
    if release(version) >= (3, 1):
        return 17
    if release(version) >= (2, 1):
        return 11
    return 8


def default_metadata(version: str) -> str:
    """The metadata mode a version runs in unless a scenario says otherwise: KRaft from 3.3, else
    ZooKeeper."""
    return "kraft" if release(version) >= KRAFT_FROM else "zookeeper"


def split_path(token: str) -> tuple[str, str | None]:
    """A `--kafka` value as (where it starts, VERSION[:MODE]; where an upgrade path goes, or None):
    `3.9.2->4.4.0` rolls 3.9.2 to 4.4.0, `3.9.2:zookeeper->kraft` migrates; unchecked."""
    start, arrow, to = token.partition("->")
    return start, (to if arrow else None)


def split_target(token: str) -> tuple[str, str | None]:
    """A `--kafka` value, VERSION or VERSION:MODE (and any path after it), as (version, mode or
    None), unchecked."""
    version, _, mode = split_path(token)[0].partition(":")
    return version, mode or None


def target_label(version: str, metadata: str | None) -> str:
    """A version and mode as `--kafka` names them: the mode only when it is not the version's
    default (3.9.2:zookeeper; 3.9.2 in KRaft is 3.9.2)."""
    return (f"{version}:{metadata}" if metadata and metadata != default_metadata(version)
            else version)


def metadata_problem(version: str, metadata: str) -> str | None:
    """Why a version cannot run in a metadata mode, or None when it can."""
    if metadata == "zookeeper" and not has_zookeeper(version):
        return f"{NO_ZOOKEEPER}; kafka.version={version!r} needs kafka.metadata='kraft'"
    if metadata == "kraft" and release(version) < KRAFT_FROM:
        return (f"KRaft is production-ready from Kafka 3.3 (KIP-833); kafka.version={version!r} "
                "needs kafka.metadata='zookeeper'")
    return None


WIKI = "https://cwiki.apache.org/confluence/display/KAFKA/"
KIP_101 = (WIKI + "KIP-101+-+Alter+Replication+Protocol+to+use+Leader+Epoch+"
           "rather+than+High+Watermark+for+Truncation")
KIP_279 = (WIKI + "KIP-279%3A+Fix+log+divergence+between+leader+and+"
           "follower+after+fast+leader+fail+over")
KIP_320 = WIKI + "KIP-320%3A+Allow+fetchers+to+detect+and+handle+log+truncation"


def replica_fencing(version: str) -> tuple[str, str]:
    """What keeps a version's replicas from truncating below the high watermark or diverging, as
    (words, KIP link). A version without a mechanism still documents the guarantee; losing it there
    is the bug the KIP fixed."""
    r = release(version)
    if r < (0, 11):
        return (f"Kafka {version} predates leader epochs (KIP-101, 0.11): a restarted "
                "follower truncates to its own high watermark and replicas can diverge "
                "across failovers", KIP_101)
    if r < (2, 0):
        return (f"Kafka {version} has leader epochs (KIP-101) but not KIP-279's truncation (2.0): "
                "replicas can still diverge across leader failovers in quick succession "
                "(KAFKA-6361)", KIP_279)
    if r < (2, 1):
        return (f"Kafka {version} has leader epochs with KIP-279 truncation, not KIP-320's epoch "
                "fencing of fetches (2.1)", KIP_320)
    return ("leader epochs (KIP-101), KIP-279 truncation and KIP-320 epoch-fenced fetches truncate "
            "a follower to its leader's log", KIP_101)



KIP_966 = WIKI + "KIP-966%3A+Eligible+Leader+Replicas"
ELR_FROM = (4, 1)


def eligible_leader_replicas(version: str) -> bool:
    """Whether a new cluster of this release elects from eligible leader replicas (KIP-966) when its
    last in-sync replica fails: on by default from 4.1 (in 4.0 it exists but is off)."""
    return release(version) >= ELR_FROM


# KIP-866's migration, with the fix that lets it finish (KAFKA-17457): the last ZooKeeper releases
MIGRATION_FROM = (3, 8, 1)


def migration_problem(version: str, metadata: str, field: str) -> str | None:
    """Why a cluster of `version` in `metadata` mode cannot migrate from ZooKeeper to KRaft, or
    None."""
    if metadata != "zookeeper":
        return (f"{field}: fault: migrate moves a ZooKeeper-mode cluster to KRaft, and "
                f"kafka.version={version!r} runs KRaft; use kafka.version: 3.9.2 with "
                "kafka.metadata: zookeeper")
    if release(version) < MIGRATION_FROM:
        return (f"{field}: the ZooKeeper-to-KRaft migration needs Kafka 3.8.1 or later "
                f"(KAFKA-17457), not kafka.version={version!r}; use 3.9.2")
    return None


def upgrade_problem(version: str, metadata: str, to: str, field: str) -> str | None:
    """Why a cluster of `version` in `metadata` mode cannot roll to release `to` as Kafka's upgrade
    notes allow, or None."""
    if release(to) <= release(version):
        return (f"{field}={to!r} is not newer than kafka.version={version!r}; an upgrade goes to "
                "a later release (to downgrade, start on the older one and add rollback: true)")
    if metadata == "zookeeper" and not has_zookeeper(to):
        return (f"{NO_ZOOKEEPER}: a ZooKeeper-mode cluster migrates to KRaft on 3.9 before it "
                f"upgrades to {to} ({field}={to!r}); start from a KRaft cluster")
    if metadata == "zookeeper":
        return (f"rolling a ZooKeeper-mode cluster is not built yet ({field}={to!r}); use "
                "kafka.metadata: kraft")
    return None
