"""The topic a scenario writes: its replication, its retention and its remote tier (KIP-405)."""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from contracts.fields import Strict, TopicName
from contracts.versions import TIERED_FROM, release

MIB = 1024 * 1024
SAME_AS_RETENTION = -2  # Kafka's local.retention.* default: keep locally what retention keeps


class TopicSpec(Strict):
    name: TopicName = "chaos"
    partitions: int = Field(3, ge=1, le=64)
    replication_factor: int = Field(3, ge=1, le=5)
    min_insync_replicas: int = Field(2, ge=1, le=5)
    unclean_leader_election: bool = False
    # Explicit replicas of every partition (node ids), e.g. [3, 4, 5] to keep a topic off the KRaft
    # quorum's majority (nodes 1-3) so that killing its whole ISR leaves the controller quorum
    # alive.
    replicas: list[int] | None = None
    # retention.ms and retention.bytes (-1: none); unset, Kafka's defaults (7 days, none)
    retention_ms: int | None = Field(None, ge=-1)
    retention_bytes: int | None = Field(None, ge=-1)
    segment_bytes: int | None = Field(None, ge=1)
    # remote.storage.enable: segments are copied to the brokers' shared remote tier
    remote_storage: bool = False
    local_retention_ms: int = Field(SAME_AS_RETENTION, ge=SAME_AS_RETENTION)
    local_retention_bytes: int = Field(SAME_AS_RETENTION, ge=SAME_AS_RETENTION)
    config: dict[str, str | int | float | bool] = {}

    @model_validator(mode="after")
    def _local_within_retention(self) -> TopicSpec:
        for kind in ("ms", "bytes"):
            local = getattr(self, f"local_retention_{kind}")
            total = getattr(self, f"retention_{kind}")
            if local != SAME_AS_RETENTION and not self.remote_storage:
                raise ValueError(f"topic.local_retention_{kind}={local} is read only with "
                                 "topic.remote_storage: true; set it or remove "
                                 f"local_retention_{kind}")
            if local >= 0 and total is not None and 0 <= total < local:
                raise ValueError(f"topic.local_retention_{kind}={local} exceeds "
                                 f"topic.retention_{kind}={total} (Kafka refuses a local tier "
                                 f"that keeps more than the topic); lower local_retention_{kind}")
        return self

    def version_problem(self, version: str) -> str | None:
        """Why this topic cannot exist on a Kafka version, or None."""
        if self.remote_storage and release(version) < TIERED_FROM:
            return (f"topic.remote_storage=true needs tiered storage (KIP-405), in Kafka 3.6 and "
                    f"later, not kafka.version={version!r}; remove remote_storage")
        least = _min_segment(version)
        if self.segment_bytes is not None and self.segment_bytes < least:
            return (f"topic.segment_bytes={self.segment_bytes} is below Kafka {version}'s "
                    f"minimum of {least} (1 MiB from 4.0, KIP-1030); raise segment_bytes")
        return None

    def settings(self) -> dict[str, str]:
        """The topic-level configs this topic asks for, as Kafka names them."""
        named = {"retention.ms": self.retention_ms, "retention.bytes": self.retention_bytes,
                 "segment.bytes": self.segment_bytes}
        cfg = {"min.insync.replicas": str(self.min_insync_replicas),
               "unclean.leader.election.enable": setting(self.unclean_leader_election)}
        cfg |= {k: str(v) for k, v in named.items() if v is not None}
        if self.remote_storage:
            cfg |= {"remote.storage.enable": "true",
                    "local.retention.ms": str(self.local_retention_ms),
                    "local.retention.bytes": str(self.local_retention_bytes)}
        return cfg | {k: setting(v) for k, v in self.config.items()}


def _min_segment(version: str) -> int:
    """The smallest segment.bytes a release takes: 1 MiB from 4.0 (KIP-1030), 14 bytes before."""
    return MIB if release(version) >= (4, 0) else 14


def setting(v: Any) -> str:
    """A YAML value as a Kafka properties value (booleans in lower case)."""
    return str(v).lower() if isinstance(v, bool) else str(v)
