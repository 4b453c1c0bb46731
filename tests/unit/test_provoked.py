"""The cluster events a run showed, from hand-built metadata samples (exact expectations)."""

from __future__ import annotations

import pandas as pd

from reports.provoked import from_metadata, from_share


def samples(*rows: tuple, topic: str = "chaos") -> pd.DataFrame:
    """(t, partition, leader, isr, controller) rows of one topic, or (..., topic) rows, as the
    sampler writes them."""
    rows = tuple(r if len(r) == 6 else (*r, topic) for r in rows)
    return pd.DataFrame(rows, columns=["t", "partition", "leader", "isr", "controller", "topic"])


def test_a_steady_cluster_shows_nothing():
    assert from_metadata(samples((1, 0, 1, "1,2,3", 1), (2, 0, 1, "1,2,3", 1),
                                 (2, 1, 2, "1,2,3", 1))) == []


def test_a_clean_failover_shrinks_the_isr_and_elects_from_it():
    meta = samples((1, 0, 1, "1,2,3", 1), (2, 0, -1, "2,3", 1), (3, 0, 2, "2,3", 1),
                   (4, 0, 2, "1,2,3", 1))
    assert from_metadata(meta) == ["isr-shrink", "leader-election"]


def test_a_leader_from_outside_the_isr_is_an_unclean_election():
    meta = samples((1, 0, 4, "4,5", 2), (2, 0, -1, "4,5", 2), (3, 0, 3, "3", 2))
    assert from_metadata(meta) == ["isr-shrink", "leader-election", "unclean-election"]


def test_a_new_active_controller_is_a_controller_change_and_unknown_controllers_are_not():
    meta = samples((1, 0, 1, "1,2,3", 1), (2, 0, 1, "1,2,3", -1), (3, 0, 1, "1,2,3", 1),
                   (4, 0, 1, "1,2,3", 3))
    assert from_metadata(meta) == ["controller-change"]


def test_partitions_of_two_topics_are_judged_apart():
    # partition 0 of each topic: alternating between the topics' samples is no election, and the
    # second topic's smaller replication factor is no shrink; its own change of leader is an
    # election
    steady = samples((1, 0, 1, "1,2,3", 1, "a"), (1, 0, 2, "2,3", 1, "b"),
                     (2, 0, 1, "1,2,3", 1, "a"), (2, 0, 2, "2,3", 1, "b"))
    assert from_metadata(steady) == []
    moved = pd.concat([steady, samples((3, 0, 3, "2,3", 1, "b"))])
    assert from_metadata(moved) == ["leader-election"]


def test_a_share_record_handed_out_again_unreleased_is_a_redelivery():
    assert from_share(None) == []
    assert from_share({"deliveries": 9, "records": 6, "again": 2, "released": 2}) == []
    assert from_share({"deliveries": 9, "records": 6, "again": 3, "released": 2}) == [
        "share-redelivery"]
