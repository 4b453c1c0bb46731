"""The share group's checkers (KIP-932), over the shared `ShareFrames`: what the group's members
processed and acknowledged, against the acknowledged sends and the group's final state."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from contracts.history import NUMBERING_STRIDE
from contracts.share import Ack
from reports.finding import Finding, checker
from reports.frames import VALUE, Frames
from reports.share_frames import POS, ShareFrames


def _acked(f: Frames, s: ShareFrames) -> DataFrame:
    """Acknowledged sends placed at an offset, with their share-partition's final state."""
    sent = f.sends.filter((F.col("outcome") == "ok") & (F.col("offset") >= 0))
    return sent.select(*VALUE, *POS).join(F.broadcast(s.states), ["topic", "partition"])


def _unfinished(f: Frames, s: ShareFrames) -> DataFrame:
    """Acknowledged sends no member accepted or rejected, nor saw at the delivery limit."""
    return _acked(f, s).join(s.done(), POS, "left_anti")


@checker("share-lost")
def share_lost(f: Frames) -> Finding | None:
    """At-least-once for a share group: each record it is done with was accepted, rejected or
    archived at the delivery limit."""
    s = f.share
    if s is None or f.facts.share_state != "known":
        return None
    finished = (F.col("offset") < F.col("start")) | (F.col("lag") == 0)
    return Finding(_unfinished(f, s).filter(finished), POS)


@checker("share-stuck")
def share_stuck(f: Frames) -> Finding | None:
    """Liveness: a share-partition left with lag once every member left and a fresh one, handed
    records, idled past the lock duration."""
    s = f.share
    if s is None or f.facts.share_state != "known" or not f.facts.share_final:
        return None
    pending = (F.col("offset") >= F.col("start")) & (F.col("lag") > 0)
    return Finding(_unfinished(f, s).filter(pending), POS)


def _member() -> Column:
    """A member: a share consumer's process (a restarted one is a new member of the group)."""
    return F.concat_ws("#", "reader", (F.col("poll") / NUMBERING_STRIDE).cast("long"))


def _after_accepts(s: ShareFrames) -> DataFrame:
    """Pairs of a confirmed accept and another member's delivery of the same record with a higher
    delivery count (`later`: the delivery came after the confirmation). The same member's is not
    judged: its client may have fetched it ahead, so when it was acquired is not known."""
    accepted = s.deliveries.filter((F.col("ack") == Ack.ACCEPT.value) & F.col("t_ok").isNotNull())
    other = s.deliveries.select(*POS, F.col("reader").alias("to"), _member().alias("m_to"),
                                F.col("delivery").alias("then"), F.col("t").alias("t_then"))
    return (accepted.select(*POS, F.col("reader").alias("by"), _member().alias("m_by"),
                            "delivery", "t_ok")
            .join(other, POS)
            .filter((F.col("m_to") != F.col("m_by")) & (F.col("then") > F.col("delivery")))
            .drop("m_to", "m_by")
            .withColumn("later", F.col("t_then") > F.col("t_ok")))


@checker("share-redelivered-after-accept")
def share_redelivered_after_accept(f: Frames) -> Finding | None:
    """An accepted record is never delivered again."""
    if f.share is None:
        return None
    return Finding(_after_accepts(f.share).filter("later").drop("later"), [*POS, "to"])


@checker("share-concurrent")
def share_concurrent(f: Frames) -> Finding | None:
    """A member's accept succeeds only while the record is still its own."""
    if f.share is None:
        return None
    return Finding(_after_accepts(f.share).filter("NOT later").drop("later"), [*POS, "to"])


@checker("share-delivery-limit")
def share_delivery_limit(f: Frames) -> Finding | None:
    """No record is delivered more times than the group's delivery limit."""
    s = f.share
    if s is None or f.facts.share_state != "known":
        return None
    limits = F.broadcast(s.states.select("topic", "partition", "limit"))
    over = s.deliveries.join(limits, ["topic", "partition"]).filter(
        F.col("delivery") > F.col("limit"))
    return Finding(over.select(*POS, "reader", "delivery", "limit"), [*POS, "reader"])
