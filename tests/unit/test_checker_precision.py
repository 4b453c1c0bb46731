"""Checker precision: incremental assignments, order within a poll, send order by time, and
mutation-sensitive edges. Each history is hand-built with the public builder and has exact expected
counts."""

from __future__ import annotations

import pytest

from tests.histories import clean
from tests.unit.test_analysis import NONE, only, run


def two_partitions():
    """`clean` with producer 0 alone: seq s at partition s % 2, offset s // 2 (offsets 0-3 in each
    partition)."""
    return clean(partitions=2, producers=1, per_producer=8)


@pytest.mark.parametrize(("first", "move"),
                         [((0,), "assign"), ((0, 1), "revoke"), ((0, 1), "lost")])
def test_a_skip_on_a_kept_partition_counts_when_another_partition_moves(
        spark, tmp_path, first, move):
    h = two_partitions()
    for p in first:
        h.event("consumer-1", "assign", partition=p)
    h.poll("consumer-1", (0, 0, 0, 0), (0, 1, 0, 2))
    # cooperative-sticky and KIP-848 move one partition at a time
    h.event("consumer-1", move, partition=1)
    h.poll("consumer-1", (0, 3, 0, 6))  # partition 0, kept throughout, skips offset 2
    a = run(spark, tmp_path, h)
    assert a.counts() == only(poll_skip=1)
    ex = a.anomalies["poll-skip"].examples[0]
    assert (ex["reader"], ex["partition"], ex["prev"], ex["offset"]) == ("consumer-1", 0, 1, 3)


def test_going_back_on_a_partition_given_again_is_no_anomaly(spark, tmp_path):
    h = two_partitions()
    h.event("consumer-1", "assign", partition=0).event("consumer-1", "assign", partition=1)
    h.poll("consumer-1", (1, 0, 0, 1), (1, 1, 0, 3))
    h.event("consumer-1", "revoke", partition=1).event("consumer-1", "assign", partition=1)
    # re-read from the committed offset: at-least-once
    h.poll("consumer-1", (1, 1, 0, 3), (1, 2, 0, 5))
    assert run(spark, tmp_path, h).counts() == NONE


def test_order_within_one_poll_is_checked(spark, tmp_path):
    h = two_partitions()
    h.event("consumer-1", "assign", partition=0)
    h.poll("consumer-1", (0, 1, 0, 2), (0, 0, 0, 0))  # one poll returned offset 1, then offset 0
    a = run(spark, tmp_path, h)
    assert a.counts() == only(nonmonotonic_poll=1)
    ex = a.anomalies["nonmonotonic-poll"].examples[0]
    assert (ex["prev"], ex["offset"]) == (1, 0)


def test_reading_the_same_offset_again_in_one_assignment_is_nonmonotonic(spark, tmp_path):
    h = two_partitions()
    h.event("consumer-1", "assign", partition=0)
    h.poll("consumer-1", (0, 0, 0, 0), (0, 1, 0, 2)).poll("consumer-1", (0, 1, 0, 2))
    assert run(spark, tmp_path, h).counts() == only(nonmonotonic_poll=1)


def resent(order: list[int], offsets: list[int]):
    """Producer 0 alone in partition 0: seq `order[i]` sent i-th, acked at `offsets[i]`, logged
    there."""
    h = clean(partitions=1, producers=1, per_producer=0)
    h.drop("events", kind="final-end")
    for seq, offset in zip(order, offsets, strict=True):
        h.send(0, seq, 0, offset)
    for seq, offset in sorted(zip(order, offsets, strict=True), key=lambda x: x[1]):
        h.read("drain", 0, offset, 0, seq, poll=1)
        for b in (1, 2, 3):
            h.replica(b, 0, offset, 0, seq)
    return h.drain_end(0, len(order))


def test_send_order_is_the_order_sent_not_the_seq_order(spark, tmp_path):
    # seq 1 was sent before seq 0, and each was acked at an offset above the one sent before it
    assert run(spark, tmp_path, resent([1, 0, 2], [0, 1, 2])).counts() == NONE


def test_one_batch_written_late_is_one_reordering(spark, tmp_path):
    # seq 0 was sent first but written after seqs 1 and 2: the offsets go back once, at seq 1
    a = run(spark, tmp_path, resent([0, 1, 2], [2, 0, 1]))
    assert a.counts() == only(nonmonotonic_send=1)
    assert a.anomalies["nonmonotonic-send"].examples[0]["seq"] == 1


def test_a_producers_sends_to_other_partitions_are_not_compared(spark, tmp_path):
    # producer 1 fills partition 0 first; producer 0 then alternates: partition 0 at 3+, partition 1
    # from 0
    h = clean(partitions=2, producers=0)
    h.drop("events", kind="final-end")
    logged = [(1, s, 0, s) for s in range(3)] + [(0, s, s % 2, 3 + s // 2 if s % 2 == 0 else s // 2)
                                                 for s in range(4)]
    for producer, seq, p, offset in logged:
        h.send(producer, seq, p, offset)
    for producer, seq, p, offset in sorted(logged, key=lambda x: (x[2], x[3])):
        h.read("drain", p, offset, producer, seq, poll=1)
        for b in (1, 2, 3):
            h.replica(b, p, offset, producer, seq)
    h.drain_end(0, 5).drain_end(1, 2)
    assert run(spark, tmp_path, h).counts() == NONE


def test_a_value_missing_at_the_last_offset_the_drain_read_is_lost(spark, tmp_path):
    # producer 0's seq 3 was acked at offset 3, the last offset of partition 0; the drain found
    # another value there (one no producer sent), so it read up to and including that offset without
    # seeing seq 3. One replica still holds seq 3 there, so only the drain's reach proves the loss.
    h = clean(partitions=1, producers=1, per_producer=4).drop("reads", seq=3).drop(
        "replicas", seq=3)
    h.read("drain", 0, 3, 9, 0).replica(1, 0, 3, 0, 3).replica(2, 0, 3, 9, 0).replica(3, 0, 3, 9, 0)
    a = run(spark, tmp_path, h)
    assert a.counts() == only(lost_write=1, inconsistent_offset=1, replica_divergence=1,
                              unexpected=1)


def test_without_a_replica_dump_a_value_absent_from_a_complete_drain_is_unseen_not_lost(
        spark, tmp_path):
    # an ack without an offset (acks=0) proves nothing by the drain's reach; only absence from every
    # replica would
    h = clean().drop("events", kind="replicas-dumped")
    h.send(1, 99, 1, -1)
    assert run(spark, tmp_path, h).counts() == only(unseen=1)
