"""The share-group workload's settings (KIP-932): how many share consumers read the topic together,
how they acknowledge each record, and the group's lock and delivery limit."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Literal

from pydantic import Field, model_validator

from contracts.clients import ClientName
from contracts.fields import Strict
from contracts.versions import SHARE_FROM, release

# The broker's floor under a lock duration (group.share.min.record.lock.duration.ms) by default.
MIN_LOCK_MS = 15_000
# A killed member keeps its partitions until its session expires (45 s by default), as a classic
# member does: the harness's members, like its consumers, use a 10 s session and 1 s heartbeats.
SESSION_MS, HEARTBEAT_MS = 10_000, 1_000
# A group coordinator that takes a share group over retries initializing its share-partitions after
# this long (30 s by default), and its members get no partitions meanwhile: a run would idle through
# its faults.
INITIALIZE_RETRY_MS = 5_000


class ShareSpec(Strict):
    """`workload: share`: share consumers in one share group in place of the classic consumers."""

    count: int = Field(3, ge=1, le=16)
    group: str = "chaos-share"
    # the share of records a member releases (redelivered) and rejects (archived); it accepts the
    # rest
    release: float = Field(0.05, ge=0, le=1)
    reject: float = Field(0.02, ge=0, le=1)
    # how long, on average, a poll's records take to process before they are acknowledged (each poll
    # draws from half to one and a half times it, so members do not keep step with a fault schedule)
    process_ms: int = Field(0, ge=0, le=120_000)
    # after: accept once the records are processed (at-least-once); before: accept first, then
    # process (at-most-once, unsafe: a crash in between loses them)
    accept: Literal["after", "before"] = "after"
    # group.share.record.lock.duration.ms: how long a delivery holds its record
    lock_ms: int = Field(15_000, ge=1000, le=60_000)
    # group.share.delivery.count.limit: deliveries after which a record is archived
    delivery_limit: int = Field(5, ge=2, le=10)
    client: ClientName = "librdkafka"

    @model_validator(mode="after")
    def _ratios(self) -> ShareSpec:
        if self.release + self.reject > 1:
            raise ValueError(f"share.release={self.release:g} plus share.reject={self.reject:g} "
                             "exceeds 1; lower one of them")
        return self

    def broker_config(self) -> dict[str, str]:
        """The broker settings that give the group its lock and delivery limit."""
        conf = {"group.share.record.lock.duration.ms": str(self.lock_ms),
                "group.share.delivery.count.limit": str(self.delivery_limit),
                "group.share.session.timeout.ms": str(SESSION_MS),
                "group.share.min.session.timeout.ms": str(SESSION_MS),
                "group.share.heartbeat.interval.ms": str(HEARTBEAT_MS),
                "group.share.min.heartbeat.interval.ms": str(HEARTBEAT_MS),
                "group.share.initialize.retry.interval.ms": str(INITIALIZE_RETRY_MS)}
        if self.lock_ms < MIN_LOCK_MS:
            conf["group.share.min.record.lock.duration.ms"] = str(self.lock_ms)
        return conf


def share_problem(version: str) -> str | None:
    """Why a version cannot run the share workload, or None."""
    if release(version) < SHARE_FROM:
        return (f"workload='share' (KIP-932 share groups) needs Kafka 4.2 or later, not "
                f"kafka.version={version!r}; use 4.2.0 or later")
    return None


class Ack(StrEnum):
    """The acknowledgement a share consumer chose for a record (`shares.ack`)."""

    ACCEPT = "accept"  # processed: never delivered again
    RELEASE = "release"  # handed back: delivered again
    REJECT = "reject"  # unprocessable: archived, never delivered again


class AckOutcome(StrEnum):
    """How one poll's acknowledgements ended (`share_acks.outcome`)."""

    SENT = "sent"  # about to be committed (partition -1: every partition of the poll)
    OK = "ok"  # the broker applied every acknowledgement of the partition
    FAIL = "fail"  # refused, or not known: it may still have been applied


@dataclass(frozen=True)
class ShareState:
    """A `share-start` event's detail: the partition's records after its start offset not yet
    delivered for good (-1: not known), and the group's delivery limit."""

    lag: int
    limit: int

    def detail(self) -> str:
        return json.dumps(asdict(self))
