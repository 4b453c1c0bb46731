"""Hand-built histories of a share group (KIP-932), each bent into one share anomaly with exact
counts; what KIP-932 allows (redelivery after a crash, a release, a lock expiry) counts nothing."""

from __future__ import annotations

from contracts.anomalies import ANOMALIES
from contracts.history import Event
from contracts.scenario import Scenario
from reports.analysis import analyze
from reports.guarantees import allowed
from reports.verdict import verdict
from tests.histories import History

NONE = dict.fromkeys(ANOMALIES, 0)
ACCEPT, RELEASE, REJECT = "accept", "release", "reject"
PER_PARTITION = 3


def acked() -> History:
    """Producer p's seq i acked at offset i of partition p (p 0 and 1), all read by the drain, on
    every replica."""
    h = History()
    for p in (0, 1):
        for i in range(PER_PARTITION):
            h.send(p, i, p, i)
    for p in (0, 1):
        for i in range(PER_PARTITION):
            h.read("drain", p, i, p, i, poll=1)
            for b in (1, 2, 3):
                h.replica(b, p, i, p, i)
        h.drain_end(p, PER_PARTITION)
    return h.replicas_dumped()


def record(p: int, i: int, delivery: int = 1, ack: str = ACCEPT) -> tuple:
    """A delivery of partition p's offset i (its value is producer p's seq i)."""
    return p, i, p, i, delivery, ack


def clean() -> History:
    """share-0 accepts partition 0, share-1 partition 1; the group is done with both."""
    h = acked()
    h.share_poll("share-0", *(record(0, i) for i in range(PER_PARTITION)))
    h.share_poll("share-1", *(record(1, i) for i in range(PER_PARTITION)))
    return h


def done(h: History, lag: int = 0) -> History:
    """Both share-partitions start past every record, with `lag` left in partition 1."""
    return h.share_state(0, PER_PARTITION, 0).share_state(1, PER_PARTITION - lag, lag)


def counts(spark, tmp_path, h: History) -> dict[str, int]:
    return analyze(spark, h.write(tmp_path / "history")).counts()


def test_a_group_that_accepted_everything_shows_nothing(spark, tmp_path):
    assert counts(spark, tmp_path, done(clean())) == NONE


def test_records_a_dead_member_never_acknowledged_are_lost_unless_delivered_again(spark,
                                                                                   tmp_path):
    h = acked()
    h.share_poll("share-0", *(record(0, i) for i in range(PER_PARTITION)), outcome=None)
    h.share_poll("share-1", *(record(1, i) for i in range(PER_PARTITION)))
    lost = analyze(spark, done(h).write(tmp_path / "lost"))
    assert lost.counts() == NONE | {"share-lost": 3}
    assert "share-redelivery" not in lost.facts.observed
    # the locks expired and share-2 got them again: the redelivery KIP-932 promises
    h.share_poll("share-2", *(record(0, i, delivery=2) for i in range(PER_PARTITION)))
    again = analyze(spark, done(h).write(tmp_path / "again"))
    assert again.counts() == NONE and "share-redelivery" in again.facts.observed


def test_a_released_record_never_delivered_again_is_lost_and_a_rejected_one_is_not(spark,
                                                                                   tmp_path):
    h = acked()
    h.share_poll("share-0", record(0, 0, ack=RELEASE), record(0, 1, ack=REJECT), record(0, 2))
    h.share_poll("share-1", *(record(1, i) for i in range(PER_PARTITION)))
    assert counts(spark, tmp_path, done(h)) == NONE | {"share-lost": 1}


def test_a_record_released_up_to_the_limit_is_archived_and_one_delivered_past_it_counts(
        spark, tmp_path):
    h = clean()
    for n in range(2, 6):  # delivered 5 times in all, the last at the limit
        h.share_poll("share-1", record(0, 0, delivery=n, ack=RELEASE))
    limit = analyze(spark, done(h).write(tmp_path / "limit"))
    assert limit.counts() == NONE | {"share-redelivered-after-accept": 4}
    assert "share-redelivery" not in limit.facts.observed  # each time a member released it
    h = acked()
    for n in range(1, 7):
        h.share_poll("share-0", record(0, 0, delivery=n, ack=RELEASE))
    h.share_poll("share-0", record(0, 1), record(0, 2))
    h.share_poll("share-1", *(record(1, i) for i in range(PER_PARTITION)))
    assert counts(spark, tmp_path / "past", done(h)) == NONE | {"share-delivery-limit": 1}


def test_another_members_later_delivery_of_an_accepted_record(spark, tmp_path):
    # share-0's accept of partition 0 offset 1 was confirmed before share-1 got it again
    h = clean().share_poll("share-1", record(0, 1, delivery=2))
    a = analyze(spark, done(h).write(tmp_path / "after" / "history"))
    assert a.counts() == NONE | {"share-redelivered-after-accept": 1}
    ex = a.anomalies["share-redelivered-after-accept"].examples[0]
    assert (ex["partition"], ex["offset"], ex["by"], ex["to"]) == (0, 1, "share-0", "share-1")
    # the same member getting it again is not judged (its client may have fetched it ahead)
    h = clean().share_poll("share-0", record(0, 1, delivery=2))
    assert counts(spark, tmp_path / "same", done(h)) == NONE


def test_an_accept_confirmed_after_another_member_got_the_record(spark, tmp_path):
    h = acked()
    h.share_poll("share-0", *(record(0, i) for i in range(PER_PARTITION)), outcome=None)
    h.share_poll("share-1", record(0, 2, delivery=2))  # share-0's lock had expired
    h.share_acked("share-0", [0])  # and yet its accept succeeded
    h.share_poll("share-1", *(record(1, i) for i in range(PER_PARTITION)))
    assert counts(spark, tmp_path, done(h)) == NONE | {"share-concurrent": 1}


def test_records_left_in_a_partition_with_lag_are_stuck(spark, tmp_path):
    def died(h: History) -> History:
        h.share_poll("share-0", *(record(0, i) for i in range(PER_PARTITION)))
        return h.share_poll("share-1", record(1, 0), outcome=None)

    # the final share consumer got share-1's record again and nothing more
    h = died(acked()).share_poll("share-drain", record(1, 0, delivery=2))
    assert counts(spark, tmp_path / "stuck", done(h, lag=2)) == NONE | {"share-stuck": 2}
    # none was handed a record: a stuck group or a consumer never assigned
    a = analyze(spark, done(died(acked()), lag=3).write(tmp_path / "unassigned"))
    assert a.counts() == NONE and (a.facts.share_lag, a.facts.share_final) == (3, 0)
    v = verdict(Scenario(name="share", workload="share", kafka={"version": "4.3.1"}), a)
    assert v.valid is None and any("lag of 3 records" in u for u in v.unknown_because)


def test_without_the_groups_final_state_the_share_checks_are_unknown(spark, tmp_path):
    h = acked()
    h.share_poll("share-0", *(record(0, i) for i in range(PER_PARTITION)), outcome=None)
    h.event("chaos-share", Event.SHARE_START, detail="reading share group offsets failed")
    a = analyze(spark, h.write(tmp_path / "history"))
    assert a.counts() == NONE
    s = Scenario(name="share", workload="share", kafka={"version": "4.3.1"})
    v = verdict(s, a)
    assert v.valid is None and any("share group's final state" in u for u in v.unknown_because)


def test_accepting_before_processing_allows_share_lost_alone():
    s = Scenario(name="share", workload="share", kafka={"version": "4.3.1"},
                 share={"accept": "before"})
    share = {a for a in ANOMALIES if a.startswith("share-")}
    assert allowed(s) & share == {"share-lost"}
    assert not allowed(s.model_copy(update={"share": s.share.model_copy(
        update={"accept": "after"})})) & share


def test_a_restarted_member_getting_an_accepted_record_again_counts(spark, tmp_path):
    # share-0's second process (its polls numbered from 10^9) is a new member of the group
    h = clean()
    h.polls["share-0"] = 1_000_000_000
    h.share_poll("share-0", record(0, 1, delivery=2))
    assert counts(spark, tmp_path, done(h)) == NONE | {"share-redelivered-after-accept": 1}


def test_a_group_with_no_lag_is_done_with_records_past_its_start_offset(spark, tmp_path):
    # brokers report the start offset where it last moved: records past it may be done already
    h = acked()
    h.share_poll("share-0", *(record(0, i) for i in range(PER_PARTITION)), outcome=None)
    h.share_poll("share-1", *(record(1, i) for i in range(PER_PARTITION)))
    h.share_state(0, 0, 0).share_state(1, 0, 0)
    assert counts(spark, tmp_path, h) == NONE | {"share-lost": 3}


def test_a_record_released_at_every_delivery_up_to_the_limit_is_archived(spark, tmp_path):
    h = acked()
    for n in range(1, 6):
        h.share_poll("share-0", record(0, 0, delivery=n, ack=RELEASE))
    h.share_poll("share-0", record(0, 1), record(0, 2))
    h.share_poll("share-1", *(record(1, i) for i in range(PER_PARTITION)))
    assert counts(spark, tmp_path, done(h)) == NONE


def test_a_delivery_with_the_same_count_as_the_accepted_one_is_not_judged(spark, tmp_path):
    # a leader change loses unpersisted increments: another member may get the same count first
    h = acked()
    h.share_poll("share-1", record(0, 1), outcome=None)
    h.share_poll("share-0", *(record(0, i) for i in range(PER_PARTITION)))
    h.share_poll("share-1", *(record(1, i) for i in range(PER_PARTITION)))
    assert counts(spark, tmp_path, done(h)) == NONE


def test_an_accept_whose_record_could_not_be_marked_is_not_confirmed(spark, tmp_path):
    h = acked()
    h.share_poll("share-0", *(record(0, i) for i in range(PER_PARTITION)), outcome=None)
    h.share_acked("share-0", [0], "fail").share_acked("share-0", [0], "ok")
    h.share_poll("share-1", record(0, 1, delivery=2))
    h.share_poll("share-1", *(record(1, i) for i in range(PER_PARTITION)))
    assert counts(spark, tmp_path, done(h)) == NONE


def test_a_run_whose_members_were_handed_nothing_is_unknown(spark, tmp_path):
    h = acked()
    h.share_poll("share-drain", *(record(p, i) for p in (0, 1) for i in range(PER_PARTITION)))
    a = analyze(spark, done(h).write(tmp_path / "history"))
    assert a.counts() == NONE
    s = Scenario(name="share", workload="share", kafka={"version": "4.3.1"})
    v = verdict(s, a)
    assert v.valid is None and any("no share group member" in u for u in v.unknown_because)
