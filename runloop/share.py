"""The share workload's steps around the run (KIP-932): the group's settings before its members
start, and after they left, a final share consumer and the group's start offsets."""

from __future__ import annotations

from contracts.history import Event, HistoryWriter
from contracts.scenario import Scenario
from contracts.share import SESSION_MS, ShareState
from harness.cluster import Cluster
from harness.share_state import ShareStateError, configure_group, share_offsets
from workloads.share import DRAIN, ShareClient

# the final share consumer ends this long after its last record past a dead member's session and
# its records' locks
IDLE_PAST_LOCK_S = 5.0
STOP_S = 30.0  # how long it may take to commit and leave once told to stop


def configure(s: Scenario, cluster: Cluster) -> None:
    """A new share group starts at the log's end by default: this one starts at its beginning."""
    configure_group(cluster.metadata.admin(), s.share.group,
                    {"share.auto.offset.reset": "earliest"})


def drain(s: Scenario, boot: str, history: HistoryWriter) -> None:
    """Once the members left: a fresh member accepts every record the group still delivers, then
    each share-partition's start offset and lag are recorded (`share-start` events)."""
    idle_s = (SESSION_MS + s.share.lock_ms) / 1000 + IDLE_PAST_LOCK_S
    final = ShareClient(0, s.share, s.topics(), boot, history, idle_s=idle_s).start()
    final.join(s.drain_timeout + idle_s)
    final.stop()
    final.join(STOP_S)
    if final.died:
        history.event(DRAIN, Event.CLIENT_ERROR, detail=final.died)
    try:
        parts = share_offsets(s.kafka.version, boot, s.share.group)
    except ShareStateError as exc:
        history.event(s.share.group, Event.SHARE_START, detail=str(exc))
        return
    for p in parts:
        history.event(s.share.group, Event.SHARE_START, topic=p.topic, partition=p.partition,
                      offset=p.start, detail=ShareState(p.lag, s.share.delivery_limit).detail())
