"""One hand-built history per anomaly, each with exact expected counts and examples."""

from __future__ import annotations

import pytest

from contracts.anomalies import ANOMALIES
from reports.analysis import analyze
from reports.frames import Readers
from tests.histories import clean

NONE = dict.fromkeys(ANOMALIES, 0)


def run(spark, tmp_path, history, **kw):
    return analyze(spark, history.write(tmp_path / "history"), **kw)


def only(**counts) -> dict[str, int]:
    return NONE | {k.replace("_", "-"): v for k, v in counts.items()}


def test_clean_history_has_no_anomaly(spark, tmp_path):
    a = run(spark, tmp_path, clean())
    assert a.counts() == NONE
    assert a.facts.drain_complete and a.facts.replicas_dumped
    assert a.metrics["acked"] == 12 and a.metrics["failed"] == 0 and a.metrics["indeterminate"] == 0


def test_lost_write_when_drain_covered_the_acked_offset(spark, tmp_path):
    # producer 0 seq 0 acked at partition 0 offset 0; nobody read it and no replica holds it.
    h = clean().drop("reads", producer=0, seq=0).drop("replicas", producer=0, seq=0)
    a = run(spark, tmp_path, h)
    assert a.counts() == only(lost_write=1)
    ex = a.anomalies["lost-write"].examples[0]
    assert (ex["producer"], ex["seq"], ex["partition"], ex["offset"]) == (0, 0, 0, 0)


def test_lost_write_by_absence_when_ack_has_no_offset(spark, tmp_path):
    # acks=0: no offset in the ack; absent from a complete final read and every replica.
    h = clean()
    h.send(1, 99, 1, -1)
    a = run(spark, tmp_path, h)
    assert a.counts() == only(lost_write=1)
    assert a.anomalies["lost-write"].examples[0]["seq"] == 99


def test_unseen_when_drain_did_not_reach_the_end(spark, tmp_path):
    h = clean().drop("reads", producer=0, seq=0, reader="drain").drop("reads", producer=0, seq=0)
    h.drop("events", kind="final-end", partition=0)
    h.event("drain", "final-end", partition=0, offset=6, detail="not-reached")
    # the drain read nothing of partition 0, and the replica still holds the record: not provably
    # lost
    h.drop("reads", reader="drain", partition=0)
    a = run(spark, tmp_path, h)
    assert a.counts()["unseen"] == 1 and a.counts()["lost-write"] == 0
    assert not a.facts.drain_complete and a.facts.partitions_not_drained == ["chaos-0"]


def test_duplicate_counts_each_value_at_two_offsets_once(spark, tmp_path):
    h = clean()
    # producer 0 seq 1 (acked at partition 1 offset 0) appears again at offset 6
    h.read("drain", 1, 6, 0, 1)
    for b in (1, 2, 3):
        h.replica(b, 1, 6, 0, 1)
    h.drop("events", kind="final-end", partition=1).event(
        "drain", "final-end", partition=1, offset=7, detail="reached")
    a = run(spark, tmp_path, h)
    assert a.counts() == only(duplicate=1)
    assert a.anomalies["duplicate"].examples[0]["positions"] == 2


def test_a_copy_re_sent_after_a_sibling_message_timed_out_is_a_timeout_duplicate(spark, tmp_path):
    # producer 0: seq 6 times out in flight 15 ms after its send, while seq 7 (sent 10 ms after 6)
    # awaits its ack; seq 7 is then written twice (offsets 6 and 7: the first write, and the re-send
    # under a bumped epoch). seq 8, sent after that timeout, is also written twice: a duplicate no
    # timeout explains.
    h = clean()
    h.send(0, 6, 0, -1, outcome="info", error="_MSG_TIMED_OUT", took_ns=15_000_000)
    h.send(0, 7, 0, 7, took_ns=100_000_000)
    h.send(0, 8, 0, 9)
    for offset, seq in ((6, 7), (7, 7), (8, 8), (9, 8)):
        h.read("drain", 0, offset, 0, seq)
        for b in (1, 2, 3):
            h.replica(b, 0, offset, 0, seq)
    h.drop("events", kind="final-end", partition=0).event(
        "drain", "final-end", partition=0, offset=10, detail="reached")
    a = run(spark, tmp_path, h)
    assert a.counts() == only(duplicate=1, timeout_duplicate=1)
    assert [(e["seq"], e["positions"]) for e in a.anomalies["duplicate"].examples] == [(8, 2)]
    assert [(e["seq"], e["positions"]) for e in a.anomalies["timeout-duplicate"]
            .examples] == [(7, 2)]


def test_a_copy_acked_the_instant_a_sibling_timed_out_is_a_timeout_duplicate(spark, tmp_path):
    # seq 7 (sent 10 ms after seq 6) is acked 5 ms later: at the very nanosecond seq 6 times out,
    # so it was still awaited then, and its second write is the timeout's re-send
    h = clean()
    h.send(0, 6, 0, -1, outcome="info", error="_MSG_TIMED_OUT", took_ns=15_000_000)
    h.send(0, 7, 0, 7, took_ns=5_000_000)
    for offset in (6, 7):
        h.read("drain", 0, offset, 0, 7)
        for b in (1, 2, 3):
            h.replica(b, 0, offset, 0, 7)
    h.drop("events", kind="final-end", partition=0).event(
        "drain", "final-end", partition=0, offset=8, detail="reached")
    sends = {r["seq"]: r for r in h.rows["sends"] if r["producer"] == 0}
    assert sends[7]["t_complete"] == sends[6]["t_complete"]
    assert run(spark, tmp_path, h).counts() == only(timeout_duplicate=1)


def _written_twice(batches: tuple[tuple[int, int], tuple[int, int]]):
    """Producer 0's seq 1 (acked at partition 1 offset 0, under producer id 7 epoch 0) written again
    at offset 6 under the second batch's producer id and epoch."""
    h = clean().drop("replicas", partition=1, offset=0)
    for b in (1, 2, 3):
        h.replica(b, 1, 0, 0, 1, batch=batches[0])
        h.replica(b, 1, 6, 0, 1, batch=batches[1])
    h.read("drain", 1, 6, 0, 1)
    h.drop("events", kind="final-end", partition=1).event(
        "drain", "final-end", partition=1, offset=7, detail="reached")
    return h


def test_a_copy_re_sent_under_a_bumped_epoch_of_its_producer_id_is_an_epoch_duplicate(spark,
                                                                                      tmp_path):
    a = run(spark, tmp_path, _written_twice(((7, 0), (7, 1))))
    assert a.counts() == only(epoch_duplicate=1)
    assert a.anomalies["epoch-duplicate"].examples[0]["positions"] == 2


@pytest.mark.parametrize("batches, why", [
    (((7, 0), (7, 0)), "one epoch: the broker should have recognised the copy"),
    (((7, 0), (8, 1)), "two producer ids"),
    (((7, 0), None), "a copy whose batch is unknown"),
])
def test_a_copy_not_re_sent_under_a_new_epoch_of_its_own_producer_id_is_a_duplicate(
        spark, tmp_path, batches, why):
    assert run(spark, tmp_path, _written_twice(batches)).counts() == only(duplicate=1), why


def test_a_copy_under_a_producer_id_another_producer_also_wrote_under_is_a_duplicate(spark,
                                                                                    tmp_path):
    # producer 1's seq 0 (partition 1 offset 3) sits under producer id 7 too: Kafka gave two
    # producers one id, so the epoch bump is not the client's own doing
    h = _written_twice(((7, 0), (7, 1))).drop("replicas", partition=1, offset=3)
    for b in (1, 2, 3):
        h.replica(b, 1, 3, 1, 0, batch=(7, 0))
    assert run(spark, tmp_path, h).counts() == only(duplicate=1)


def test_inconsistent_offset_between_ack_and_log(spark, tmp_path):
    h = clean()
    h.send(0, 50, 0, 2)  # acked at partition 0 offset 2, where the log holds another value
    h.read("drain", 0, 7, 0, 50)
    for b in (1, 2, 3):
        h.replica(b, 0, 7, 0, 50)
    h.drop("events", kind="final-end", partition=0).event(
        "drain", "final-end", partition=0, offset=8, detail="reached")
    a = run(spark, tmp_path, h)
    # offset 2 holds two values, and (0, 50) sits at two positions (ack at 2, log at 7).
    assert a.counts() == only(inconsistent_offset=1, duplicate=1)
    ex = a.anomalies["inconsistent-offset"].examples[0]
    assert (ex["partition"], ex["offset"], ex["values"]) == (0, 2, 2)


def test_nonmonotonic_send(spark, tmp_path):
    h = clean(partitions=1, producers=1, per_producer=4)
    # swap the acked offsets of seq 1 and seq 2
    sends = h.rows["sends"]
    sends[1]["offset"], sends[2]["offset"] = 2, 1
    for table in ("reads", "replicas"):
        for r in h.rows[table]:
            if r["seq"] in (1, 2):
                r["seq"] = 3 - r["seq"]
    a = run(spark, tmp_path, h)
    assert a.counts() == only(nonmonotonic_send=1)
    assert a.anomalies["nonmonotonic-send"].examples[0]["seq"] == 2


def test_poll_skip_and_nonmonotonic_poll_within_one_assignment(spark, tmp_path):
    h = clean(partitions=1, producers=1, per_producer=4)
    h.drop("reads", reader="consumer-0", offset=1)  # 0 -> 2 is a skip
    h.read("consumer-0", 0, 0, 0, 0, poll=9)  # going back to 0 after 3
    a = run(spark, tmp_path, h)
    assert a.counts() == only(poll_skip=1, nonmonotonic_poll=1)
    assert a.anomalies["poll-skip"].examples[0]["prev"] == 0
    assert a.anomalies["nonmonotonic-poll"].examples[0]["prev"] == 3


def test_going_back_after_a_new_assignment_is_not_an_anomaly(spark, tmp_path):
    h = clean(partitions=1, producers=1, per_producer=4)
    h.event("consumer-0", "revoke").event("consumer-0", "assign")
    h.read("consumer-0", 0, 2, 0, 2, poll=9)  # re-reads from the committed offset: at-least-once
    a = run(spark, tmp_path, h)
    assert a.counts() == NONE


@pytest.mark.parametrize(("assigns", "readers", "rebalanced"), [
    ([], None, False),
    ([("consumer-0", 0), ("consumer-1", 1)], None, False),
    # a crashed member's partition, handed to another
    ([("consumer-0", 0), ("consumer-1", 0)], None, True),
    # a member restarted and given its partition again
    ([("consumer-0", 0), ("consumer-0", 0)], None, True),
    # assign mode
    ([("consumer-0", 0), ("consumer-0", 0)], Readers(contiguous=("consumer-0",)), False),
    # two groups, each handing partition 0 out once
    ([("consumer-0", 0), ("copier-0", 0)], None, False),
])
def test_a_rebalance_is_seen_when_a_group_hands_a_partition_out_again(
        spark, tmp_path, assigns, readers, rebalanced):
    h = clean()
    for source, partition in assigns:
        h.event(source, "assign", partition=partition)
    a = run(spark, tmp_path, h, readers=readers)
    assert ("rebalance" in a.facts.observed) is rebalanced
    assert a.counts() == NONE


def test_committed_unread_below_the_groups_committed_offset(spark, tmp_path):
    # partition 0 holds offsets 0..5; offset 5 is (producer 1, seq 5). The group committed 6 but
    # never read it.
    h = clean().drop("reads", reader="consumer-0", partition=0, offset=5)
    h.event("chaos", "committed", partition=0, offset=6).event(
        "chaos", "committed", partition=1, offset=-1)
    a = run(spark, tmp_path, h)
    assert a.counts() == only(committed_unread=1) and a.facts.group_commits == "known"
    ex = a.anomalies["committed-unread"].examples[0]
    assert (ex["partition"], ex["offset"], ex["producer"], ex["seq"], ex["committed"]) == (
        0, 5, 1, 5, 6)


def test_unread_records_at_or_above_the_committed_offset_are_only_lag(spark, tmp_path):
    h = clean().drop("reads", reader="consumer-0", partition=0, offset=5)
    h.event("chaos", "committed", partition=0, offset=5)
    assert run(spark, tmp_path, h).counts() == NONE


def test_aborted_read(spark, tmp_path):
    h = clean()
    h.send(1, 77, 0, -1, outcome="fail")
    h.read("consumer-0", 0, 99, 1, 77, poll=50)
    a = run(spark, tmp_path, h)
    assert a.counts()["aborted-read"] == 1
    assert a.anomalies["aborted-read"].examples[0]["seq"] == 77


def test_unexpected_foreign_and_corrupt_values(spark, tmp_path):
    h = clean()
    h.read("drain", 0, 100, -1, -1, checksum_ok=False)  # not one of ours
    h.read("drain", 0, 101, 0, 3, checksum_ok=False)  # ours, damaged
    h.read("drain", 0, 102, 9, 9)  # intact, but no producer ever attempted it
    a = run(spark, tmp_path, h)
    assert a.counts()["unexpected"] == 3


def test_a_run_cut_off_before_its_drain_judges_only_foreign_and_corrupt_values_unexpected(
        spark, tmp_path):
    # killed mid-run: a consumer read producer 0's seq 6, whose send was in flight when the producer
    # died unrecorded
    h = clean().drop("reads", reader="drain").drop("events", kind="final-end")
    h.read("consumer-0", 0, 6, 0, 6, poll=9)
    h.read("consumer-0", 0, 7, 0, 3, poll=9, checksum_ok=False)
    a = run(spark, tmp_path, h)
    assert not a.facts.drain_ran and a.counts()["unexpected"] == 1
    assert a.anomalies["unexpected"].examples[0]["checksum_ok"] is False


def test_vanished_read_of_an_acked_value_is_also_a_lost_write(spark, tmp_path):
    # read live, then gone from the complete final log and every replica (an unclean election's
    # truncation)
    h = clean().drop("reads", reader="drain", producer=1, seq=0).drop("replicas", producer=1, seq=0)
    a = run(spark, tmp_path, h)
    assert a.counts() == only(vanished_read=1, lost_write=1)
    for anomaly in ("vanished-read", "lost-write"):
        ex = a.anomalies[anomaly].examples[0]
        assert (ex["producer"], ex["seq"]) == (1, 0)


def test_vanished_read_of_an_indeterminate_value_is_not_a_lost_write(spark, tmp_path):
    h = clean()
    h.send(0, 40, 0, -1, outcome="info").read("consumer-0", 0, 6, 0, 40, poll=9)
    a = run(spark, tmp_path, h)
    assert a.counts() == only(vanished_read=1)
    assert a.anomalies["vanished-read"].examples[0]["seq"] == 40


def test_replica_divergence_below_the_high_watermark(spark, tmp_path):
    h = clean()
    for r in h.rows["replicas"]:
        if r["broker"] == 3 and r["partition"] == 1 and r["offset"] == 2:
            r["producer"], r["seq"] = 1, 4  # broker 3 holds another value at partition 1 offset 2
    a = run(spark, tmp_path, h)
    assert a.counts()["replica-divergence"] == 1
    assert a.counts()["inconsistent-offset"] == 1
    assert a.counts()["duplicate"] == 1  # (1, 4) now also sits at partition 1 offset 2


def test_a_replica_left_out_of_the_last_isr_is_not_judged(spark, tmp_path):
    # broker 3 kept a zombie leader's tail at partition 1 offset 2 and never rejoined (a wedged
    # migration): Kafka would truncate it as it caught up, so it is not a divergence
    def bent(isr_at_end: list[int]):
        h = clean()
        for r in h.rows["replicas"]:
            if r["broker"] == 3 and r["partition"] == 1 and r["offset"] == 2:
                r["producer"], r["seq"] = 9, 0  # a value no producer's ack or read holds
        return h.isr(1, [1, 2, 3]).isr(0, [1, 2, 3]).isr(1, isr_at_end)
    assert run(spark, tmp_path / "out", bent([1, 2])).counts() == only()
    a = run(spark, tmp_path / "in", bent([2, 1, 3]))
    assert a.counts() == only(replica_divergence=1, inconsistent_offset=1)


def test_metadata_a_migration_read_before_and_not_after_is_lost(spark, tmp_path):
    kept = ["topic chaos: partitions=3", "user kchaos-witness: SCRAM_SHA_256 iterations=8192"]
    before = [*kept, "topic chaos: min.insync.replicas=2", "topic chaos: replicas[0]=1,2,3"]
    after = [*kept, "topic chaos: min.insync.replicas=1", "topic other: partitions=1"]
    h = clean().fault("migrate", [], inventory={"before": before, "after": after})
    h.fault("migrate", [], outcome="no-effect", error="migrate: the run ended")
    a = run(spark, tmp_path, h)
    assert a.counts() == only(metadata_lost=2)  # a changed value and a partition gone; no gain
    assert sorted(e["entry"] for e in a.anomalies["metadata-lost"].examples) == [
        "topic chaos: min.insync.replicas=2", "topic chaos: replicas[0]=1,2,3"]


def test_indeterminate_sends_found_in_the_log_count_as_recovered(spark, tmp_path):
    h = clean()
    h.send(0, 40, 0, -1, outcome="info")
    h.read("drain", 0, 6, 0, 40)
    # never written: indeterminate, not recovered, not an error
    h.send(0, 41, 0, -1, outcome="info")
    h.drop("events", kind="final-end", partition=0).event(
        "drain", "final-end", partition=0, offset=7, detail="reached")
    a = run(spark, tmp_path, h)
    assert a.counts() == NONE
    assert a.metrics["indeterminate"] == 2 and a.metrics["recovered"] == 1


def test_interrupted_run_reading_jsonl_is_unknown_not_a_crash(spark, tmp_path):
    h = clean().drop("events", kind="final-end").drop("events", kind="replicas-dumped")
    h.rows["reads"] = [r for r in h.rows["reads"] if r["reader"] != "drain"]
    h.rows["replicas"] = []
    d = h.write(tmp_path / "history", compact=False)
    with (d / "sends.jsonl").open("a") as f:
        f.write('{"producer":0,"seq":')  # torn last line of a killed writer
    a = analyze(spark, d)
    assert a.counts()["lost-write"] == 0
    assert not a.facts.drain_ran and not a.facts.replicas_dumped


@pytest.mark.parametrize("gap_s, windows", [(0.5, 0), (2.5, 1)])
def test_unavailability_windows(spark, tmp_path, gap_s, windows):
    h = clean(partitions=1, producers=1, per_producer=2)
    h.t += int(gap_s * 1e9)
    h.send(0, 2, 0, 2).read("drain", 0, 2, 0, 2)
    for b in (1, 2, 3):
        h.replica(b, 0, 2, 0, 2)
    h.drop("events", kind="final-end").event("drain", "final-end", partition=0, offset=3,
                                             detail="reached")
    a = run(spark, tmp_path, h)
    assert len(a.metrics["unavailability"]) == windows


@pytest.mark.parametrize("compact", [True, False])
def test_matrix_run_directories_with_glob_characters_are_read_literally(spark, tmp_path, compact):
    # a matrix run lives in runs/<name>[<key>=<value>]/...; Hadoop would read the brackets as a glob
    d = clean().write(tmp_path / "rolling-restart[fault=rolling-restart]" / "history",
                      compact=compact)
    a = analyze(spark, d)
    assert a.counts() == NONE and a.metrics["acked"] == 12


def test_client_trouble_is_listed_in_time_order_and_judged_nowhere(spark, tmp_path):
    h = clean()
    h.event("producer-1", "fatal", detail="OUT_OF_ORDER_SEQUENCE_NUMBER: desync")
    h.event("producer-1", "recreated", detail="after a fatal error")
    h.event("producer-0", "client-error", detail="SystemError: boom")
    a = run(spark, tmp_path, h)
    assert a.counts() == NONE
    assert a.facts.client_trouble == ["producer-1 fatal: OUT_OF_ORDER_SEQUENCE_NUMBER: desync",
                                      "producer-1 recreated: after a fatal error",
                                      "producer-0 client-error: SystemError: boom"]
