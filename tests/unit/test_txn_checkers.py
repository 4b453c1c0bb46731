"""The transactional checkers on hand-built histories (Jepsen's kafka_test.clj cases among them),
exact counts."""

from __future__ import annotations

from reports.analysis import analyze
from reports.frames import Readers
from tests.histories import transactional
from tests.unit.test_analysis import only

READERS = Readers(contiguous=("consumer-0", "consumer-1"), committed=("consumer-0",))


def run(spark, tmp_path, history, readers=READERS):
    return analyze(spark, history.write(tmp_path / "history"), readers)


def test_markers_and_aborted_records_are_no_skip_and_no_loss(spark, tmp_path):
    a = run(spark, tmp_path, transactional())
    assert a.facts.transactional
    assert a.counts() == only()


def test_aborted_read_by_a_read_committed_reader_only(spark, tmp_path):
    # Jepsen's G1a: consumer-0 (read_committed) returns txn 1's value; consumer-1 (read_uncommitted)
    # may.
    h = transactional().read("consumer-0", 0, 2, 0, 2, poll=1)
    a = run(spark, tmp_path, h)
    assert a.counts() == only(aborted_read=1)
    assert [(e["reader"], e["seq"]) for e in a.anomalies["aborted-read"]
            .examples] == [("consumer-0", 2)]


def test_a_read_uncommitted_reader_judged_as_read_committed_is_caught(spark, tmp_path):
    a = run(spark, tmp_path, transactional(),
            Readers(("consumer-0", "consumer-1"), ("consumer-0", "consumer-1")))
    assert a.counts() == only(aborted_read=1)
    assert a.anomalies["aborted-read"].examples[0]["reader"] == "consumer-1"


def test_committed_transaction_visible_in_part(spark, tmp_path):
    # consumer-0 reads txn 2's value in partition 0 and txn 3's at partition 1 offset 4, passing
    # over txn 2's value at partition 1 offset 2: a torn transaction, and in that partition a
    # skipped record.
    h = transactional(committed_reads=False)
    for p, off, seq in ((0, 0, 0), (0, 4, 3), (1, 0, 1), (1, 4, 5)):
        h.read("consumer-0", p, off, 0, seq, poll=2)
    a = run(spark, tmp_path, h)
    assert a.counts() == only(torn_transaction=1, poll_skip=1)
    ex = a.anomalies["torn-transaction"].examples[0]
    assert (ex["reader"], ex["txn"], ex["passed_over"], ex["values"][0]["seq"]) == (
        "consumer-0", 2, 1, 4)


def test_a_transaction_seen_through_a_value_without_an_ack_offset_is_torn_too(spark, tmp_path):
    # as above, but the value consumer-0 read of txn 2 was sent with no ack (info): reading it is
    # still reading part of txn 2
    h = transactional(committed_reads=False).drop("sends", seq=3)
    h.send(0, 3, 0, outcome="info", error="X", txn=2)
    for p, off, seq in ((0, 0, 0), (0, 4, 3), (1, 0, 1), (1, 4, 5)):
        h.read("consumer-0", p, off, 0, seq, poll=2)
    assert run(spark, tmp_path, h).counts() == only(torn_transaction=1, poll_skip=1)


def test_transactions_across_two_topics_clean_then_torn(spark, tmp_path):
    # The same transactions with partition 1's values in a second topic: clean as written;
    # consumer-0 reading as in the test above passes over txn 2's value in the other topic, a torn
    # transaction across topics.
    assert run(spark, tmp_path / "clean", transactional(two_topics=True)).counts() == only()
    h = transactional(committed_reads=False, two_topics=True)
    for topic, off, seq in (("chaos", 0, 0), ("chaos", 4, 3), ("chaos-2", 0, 1), ("chaos-2", 4, 5)):
        h.topic = topic
        h.read("consumer-0", 0, off, 0, seq, poll=2)
    a = run(spark, tmp_path / "torn", h)
    assert a.counts() == only(torn_transaction=1, poll_skip=1)
    ex = a.anomalies["torn-transaction"].examples[0]
    assert (ex["reader"], ex["txn"], ex["passed_over"], ex["values"][0]["seq"]) == (
        "consumer-0", 2, 1, 4)


def test_lost_committed_write_but_a_lost_aborted_one_is_no_anomaly(spark, tmp_path):
    # txn 2's value in partition 1 is gone; consumer-0 read its other value and read partition 1
    # past it: the committed transaction is also torn for that reader. Txn 1's lost value was
    # aborted: no anomaly.
    h = transactional()
    for table in ("reads", "replicas"):
        h.drop(table, producer=0, seq=4).drop(table, producer=0, seq=2)
    a = run(spark, tmp_path, h)
    assert a.counts() == only(lost_committed=1, torn_transaction=1)
    assert [(e["seq"], e["partition"], e["offset"]) for e in a.anomalies["lost-committed"]
            .examples] == [(4, 1, 2)]


def test_a_transaction_without_its_txns_row_is_never_judged_read_before_its_commit(spark,
                                                                                    tmp_path):
    # its producer was killed before recording it: whether it asked to commit first is unknown
    a = run(spark, tmp_path, transactional().drop("txns", txn=3))
    assert a.counts() == only()


def test_a_read_of_a_transaction_never_asked_to_commit_is_precommitted(spark, tmp_path):
    # txn 3's producer never asked to commit it and never learned its fate, yet consumer-0
    # (read_committed) returned its value
    h = transactional().drop("txns", txn=3).transaction(0, 3, "unknown", asked_commit=False)
    a = run(spark, tmp_path, h)
    assert a.counts() == only(precommitted_read=1)
    assert a.anomalies["precommitted-read"].examples[0]["t_commit"] == -1


def test_read_before_the_commit_was_asked_for(spark, tmp_path):
    # read later, before the commit was asked for
    h = transactional().drop("reads", reader="consumer-0", seq=5)
    h.drop("txns", txn=3).read("consumer-0", 1, 4, 0, 5, poll=9).transaction(0, 3, "committed")
    a = run(spark, tmp_path, h)
    assert a.counts() == only(precommitted_read=1)
    assert a.anomalies["precommitted-read"].examples[0]["seq"] == 5


def test_a_read_committed_group_owes_no_read_of_a_transaction_that_did_not_commit(spark, tmp_path):
    # consumer-0 (read_committed) is the group's only member and its offsets are committed past
    # txn 1's aborted value: it was right to skip it; a committed value it skipped is owed
    group = Readers(contiguous=(), committed=("consumer-0",))
    h = transactional().drop("reads", reader="consumer-1")
    for p in (0, 1):
        h.event("chaos", "committed", partition=p, offset=6)
    assert run(spark, tmp_path / "aborted", h, group).counts() == only()
    a = run(spark, tmp_path / "committed", h.drop("reads", reader="consumer-0", seq=3), group)
    assert a.counts() == only(committed_unread=1)
    assert a.anomalies["committed-unread"].examples[0]["seq"] == 3
