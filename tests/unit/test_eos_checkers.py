"""The eos-copy checkers on hand-built histories, exact counts; and the rules that judge them."""

from __future__ import annotations

from kchaos.catalog import validate
from reports import guarantees
from reports.analysis import analyze
from reports.frames import Readers
from tests.histories import eos
from tests.unit.test_analysis import only

READERS = Readers(contiguous=("consumer-0",), copy_topic="chaos-copy")


def run(spark, tmp_path, history, readers=READERS):
    return analyze(spark, history.write(tmp_path / "history"), readers)


def test_every_record_copied_once_is_no_anomaly(spark, tmp_path):
    a = run(spark, tmp_path, eos())
    assert a.counts() == only()
    assert (a.facts.copy_commits, a.facts.copy_behind, a.facts.drain_complete) == (
        "known", [], True)


def test_a_record_copied_twice_is_an_eos_duplicate(spark, tmp_path):
    a = run(spark, tmp_path, eos().copy(0, 9, 2))
    assert a.counts() == only(eos_duplicate=1)
    ex = a.anomalies["eos-duplicate"].examples[0]
    assert (ex["in_partition"], ex["in_offset"], ex["copies"],
            [x["offset"] for x in ex["at"]]) == (0, 2, 2, [3, 9])


def test_a_committed_record_without_its_copy_is_an_eos_loss(spark, tmp_path):
    a = run(spark, tmp_path, eos().drop("reads", topic="chaos-copy", partition=1, seq=3))
    assert a.counts() == only(eos_loss=1)
    ex = a.anomalies["eos-loss"].examples[0]
    assert (ex["partition"], ex["offset"], ex["committed"]) == (1, 3, 6)


def test_only_the_stages_input_topic_is_judged_for_eos_loss(spark, tmp_path):
    # the input's record at partition 1 offset 3 went unread and uncopied; another topic's record
    # there is no input of the stage, so nothing it copied is missing
    h = eos().drop("reads", topic="chaos", partition=1, offset=3)
    h.drop("reads", topic="chaos-copy", partition=1, seq=3)
    h.topic = "other"
    h.send(7, 0, 1, 3).read("drain", 1, 3, 7, 0).drain_end(1, 4)
    assert run(spark, tmp_path, h).counts()["eos-loss"] == 0


def test_records_above_the_committed_offset_are_not_judged_and_the_stage_is_behind(spark, tmp_path):
    a = run(spark, tmp_path, eos(behind=2))
    assert a.counts() == only()
    assert a.facts.copy_behind == [0]


def test_without_a_stage_the_output_checks_do_not_apply(spark, tmp_path):
    a = run(spark, tmp_path, eos(), Readers(contiguous=("consumer-0",)))
    assert a.facts.copy_commits == "none"
    assert a.counts()["eos-loss"] == a.counts()["eos-duplicate"] == 0


def test_the_stage_promises_exactly_once_unless_its_offsets_leave_the_transaction():
    base = {"name": "e", "workload": "eos-copy"}
    safe = guarantees.allowed(validate(base, "s"))
    outside = guarantees.allowed(validate(base | {"copier": {"offsets": "outside"}}, "s"))
    truncating = guarantees.allowed(validate(base | {"topic": {"unclean_leader_election": True}},
                                             "s"))
    assert {"eos-loss", "eos-duplicate"} & safe == set()
    assert {"eos-loss", "eos-duplicate"} <= outside & truncating
