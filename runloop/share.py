"""The share workload's steps around the run (KIP-932): the group's settings before its members
start, and after they left, a final share consumer and the group's start offsets."""

from __future__ import annotations

import time

from contracts.history import NUMBERING_STRIDE, Event, HistoryWriter
from contracts.scenario import Scenario
from contracts.share import SESSION_MS, ShareState
from harness.cluster import Cluster
from harness.share_state import (
    SharePartition,
    ShareStateError,
    configure_group,
    share_offsets,
)
from runloop.clients import restart
from workloads.client_process import ClientProcess
from workloads.share import DRAIN, ShareClient

# the final share consumer ends this long after its last record past a dead member's session and
# its records' locks (its first counts from its start)
IDLE_PAST_LOCK_S = 5.0
STOP_S = 30.0  # how long it may take to commit and leave once told to stop
LAG_EVERY_S = 3.0  # how often the group's lag is read while the final share consumer runs
HANDED_S = 60.0  # how long the schedule waits for every member's first records
# a member with no records this long after it started is restarted once, before any fault: a
# librdkafka share consumer subscribed as the cluster came up has stayed empty-handed past HANDED_S
REHAND_S = 20.0


def configure(s: Scenario, cluster: Cluster) -> None:
    """A new share group starts at the log's end by default: this one starts at its beginning."""
    configure_group(cluster.metadata.admin(), s.share.group,
                    {"share.auto.offset.reset": "earliest"})


def wait_handed(members: list[ClientProcess], history: HistoryWriter) -> None:
    """Wait until every member was handed records, HANDED_S at most: a fault before that finds a
    member with nothing to lose. One still empty-handed after REHAND_S is restarted (a `recreated`
    event); one empty-handed at the end is the verdict's to judge."""
    begun = time.monotonic()
    empty = [m for m in members if not m.wait_ready(max(0.0, begun + REHAND_S - time.monotonic()))]
    for m in empty:
        restart(m, history, f"restarted before any fault: no records in {REHAND_S:.0f} s")
    for m in members:
        m.wait_ready(max(0.0, begun + HANDED_S - time.monotonic()))


def _read(s: Scenario, boot: str) -> list[SharePartition] | None:
    """The group's share-partitions now; None when they could not be read."""
    try:
        return share_offsets(s.kafka.version, boot, s.share.group)
    except ShareStateError:
        return None


def _done(s: Scenario, parts: list[SharePartition] | None) -> bool:
    """Whether the group has no lag left in any partition of the workload's topics."""
    return (parts is not None and len(parts) == len(s.topics()) * s.topic.partitions
            and all(p.lag == 0 for p in parts))


def _idle_s(s: Scenario) -> float:
    """How long the final share consumer goes on without a record: past a dead member's session
    and its records' locks."""
    return (SESSION_MS + s.share.lock_ms) / 1000 + IDLE_PAST_LOCK_S


def _final_member(s: Scenario, boot: str, history: HistoryWriter, first: int,
                  deadline: float) -> tuple[bool, list[SharePartition] | None]:
    """One fresh member that accepts every record the group delivers, until it idles out, the
    group has no lag left, or the deadline; whether it was handed records, and the last read."""
    final = ShareClient(0, s.share, s.topics(), boot, history, first, _idle_s(s)).start()
    parts = _read(s, boot)
    while final.thread.is_alive() and time.monotonic() < deadline and not _done(s, parts):
        final.join(LAG_EVERY_S)
        parts = _read(s, boot)
    final.stop()
    final.join(STOP_S)
    if final.died:
        history.event(DRAIN, Event.CLIENT_ERROR, detail=final.died)
    return final.positioned.is_set(), parts


def drain(s: Scenario, boot: str, history: HistoryWriter) -> None:
    """Once the members left: a fresh member accepts every record the group still delivers, then
    each share-partition's start offset and lag are recorded (`share-start` events). One handed
    nothing while lag is left is replaced (a `recreated` event), as a member at the start is."""
    idle_s = _idle_s(s)
    deadline = time.monotonic() + s.drain_timeout + idle_s
    handed, parts, n = False, None, 0
    while not handed and time.monotonic() < deadline and not _done(s, parts):
        if n:
            history.event(DRAIN, Event.RECREATED, detail=f"handed no record in {idle_s:.0f} s "
                                                         "while the group had lag left")
        handed, parts = _final_member(s, boot, history, n * NUMBERING_STRIDE, deadline)
        n += 1
    if not _done(s, parts):
        try:
            parts = share_offsets(s.kafka.version, boot, s.share.group)
        except ShareStateError as exc:
            history.event(s.share.group, Event.SHARE_START, detail=str(exc))
            return
    for p in parts:
        history.event(s.share.group, Event.SHARE_START, topic=p.topic, partition=p.partition,
                      offset=p.start, detail=ShareState(p.lag, s.share.delivery_limit).detail())
