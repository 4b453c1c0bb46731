"""Hand-built histories of a topic whose retention deleted records: deleted within retention is a
retention-breach, deleted past it is nothing, and neither is a lost write, a vanished read or a
skip."""

from __future__ import annotations

from bench.pandas_checks import check
from contracts.anomalies import ANOMALIES
from reports.analysis import analyze
from tests.histories import History, clean

NONE = dict.fromkeys(ANOMALIES, 0)
RECORD = 100  # bytes of one record, at most


def deleted_below(start: int):
    """The clean history with partition 0's offsets below `start` gone from the final read and
    every replica, and the drain's log start there (partition 1 starts at 0)."""
    h = clean()
    for offset in range(start):
        h.drop("reads", reader="drain", partition=0, offset=offset)
        h.drop("replicas", partition=0, offset=offset)
    return h.drain_start(0, start).drain_start(1, 0)


def counts(spark, tmp_path, h) -> dict[str, int]:
    """The analysis's counts, which the benchmark's pandas baseline finds too."""
    found = analyze(spark, h.write(tmp_path / "history")).counts()
    assert check(tmp_path / "history")["counts"] == found
    return found


def test_records_deleted_while_the_bytes_after_them_are_within_retention_bytes(spark, tmp_path):
    # partition 0 ends at 6: offsets 0 and 1 have 5 and 4 records after them, 500 and 400 bytes
    h = deleted_below(2).retention(ms=-1, bytes_=450, record_bytes_max=RECORD)
    a = analyze(spark, h.write(tmp_path / "history"))
    assert a.counts() == NONE | {"retention-breach": 1}
    ex = a.anomalies["retention-breach"].examples[0]
    assert (ex["partition"], ex["offset"]) == (0, 1)


def test_records_the_drain_read_before_retention_deleted_them_within_it_are_a_breach(
        spark, tmp_path):
    # the drain read partition 0 from offset 0; then offsets 0 and 1 went from every replica, and
    # the log start was 2 when the drain ended (KAFKA-20732 deleting after the drain read, say)
    h = clean()
    for offset in range(2):
        h.drop("replicas", partition=0, offset=offset)
    h = h.drain_start(0, 2).drain_start(1, 0).retention(ms=-1, bytes_=450, record_bytes_max=RECORD)
    assert counts(spark, tmp_path, h) == NONE | {"retention-breach": 1}


def test_records_deleted_past_retention_bytes_or_retention_ms_are_no_anomaly(spark, tmp_path):
    assert counts(spark, tmp_path / "bytes",
                  deleted_below(2).retention(-1, 400, RECORD)) == NONE
    # every send is older than 1 ms (plus the clock margin) when the drain ends
    assert counts(spark, tmp_path / "ms",
                  deleted_below(2).retention(1, -1, RECORD)) == NONE
    assert counts(spark, tmp_path / "none",
                  deleted_below(2).retention(600_000, -1, RECORD)) == NONE | {
        "retention-breach": 2}


def grown_past_a_deletion(deleted: int, before: int = 10, after: int = 10):
    """Partition 0 takes `before` sends, then the sampler sees its log start at `deleted`, then
    `after` more sends come; the drain reads from `deleted` to the end."""
    h = History()
    for seq in range(before):
        h.send(0, seq, 0, seq)
    h.event("sampler", "log-start", partition=0, offset=deleted)
    for seq in range(before, before + after):
        h.send(0, seq, 0, seq)
    for offset in range(deleted, before + after):
        h.read("drain", 0, offset, 0, offset, poll=1)
        for broker in (1, 2, 3):
            h.replica(broker, 0, offset, 0, offset)
    return h.drain_end(0, before + after).drain_start(0, deleted).replicas_dumped()


def test_a_deletion_is_judged_by_the_bytes_after_a_record_when_its_log_start_moved(
        spark, tmp_path):
    # when the sampler saw offsets 0 to 2 gone, no send after offset 9 had been made: 900, 800
    # and 700 bytes followed them; by the run's end 1,700 and more did
    assert counts(spark, tmp_path / "within",
                  grown_past_a_deletion(3).retention(-1, 750, RECORD)) == NONE | {
        "retention-breach": 1}
    assert counts(spark, tmp_path / "past",
                  grown_past_a_deletion(3).retention(-1, 700, RECORD)) == NONE


def test_without_the_topics_retention_records_gone_below_the_log_start_are_lost(spark, tmp_path):
    # the drain covered them and every replica lacks them; consumer-0 had read them live
    assert counts(spark, tmp_path, deleted_below(3)) == NONE | {"lost-write": 3,
                                                               "vanished-read": 3}


def test_a_reader_sent_past_deleted_offsets_skipped_nothing(spark, tmp_path):
    # consumer-0 read partition 0 offset 0, then 4: 1 to 3 were deleted before it got to them
    h = deleted_below(4).retention(1, -1, RECORD)
    for offset in (1, 2, 3):
        h.drop("reads", reader="consumer-0", partition=0, offset=offset)
    assert counts(spark, tmp_path, h) == NONE


def test_skipping_offsets_the_log_still_holds_is_a_poll_skip(spark, tmp_path):
    h = deleted_below(1).retention(1, -1, RECORD)
    for offset in (1, 2, 3):
        h.drop("reads", reader="consumer-0", partition=0, offset=offset)
    assert counts(spark, tmp_path, h) == NONE | {"poll-skip": 1}
