"""History writing/compaction, payload checksums, replica dump parsing and seeded schedules."""

from __future__ import annotations

import orjson
import pyarrow.parquet as pq
from hypothesis import given
from hypothesis import strategies as st

from faults import ops, schedule
from harness.history import HistoryWriter, jsonl, read_jsonl
from harness.replicas import parse_dump
from harness.scenario import FAULTS, FaultSpec
from workloads.payload import decode, encode


def test_payload_roundtrip_and_damage_detected():
    v = encode(3, 1234, 80)
    assert len(v) >= 80 and decode(v) == (3, 1234, True)
    damaged = v[:-1] + b"y"
    assert decode(damaged) == (3, 1234, False)
    assert decode(b"hello") is None


FLAT = st.dictionaries(st.sampled_from(["detail", "topic", "seq", "ok"]),
                       st.one_of(st.none(), st.booleans(), st.integers(-2**63, 2**63 - 1),
                                 st.text(st.sampled_from('},{"\\\n xé'), max_size=12)))


@given(st.lists(FLAT, max_size=6))
def test_batch_json_lines_equal_one_dump_per_row(rows):
    assert jsonl(rows) == b"".join(orjson.dumps(r) + b"\n" for r in rows)


def test_history_is_readable_before_close_and_compacts(tmp_path):
    w = HistoryWriter(tmp_path, flush_s=0.05)
    w.write("sends", {"producer": 1, "seq": 0, "outcome": "ok"})
    w.flush()
    with (tmp_path / "sends.jsonl").open("a") as f:
        f.write('{"producer": 1, "se')  # a torn line, as a SIGKILL mid-write leaves
    assert read_jsonl(tmp_path, "sends").num_rows == 1
    w.close()
    assert (tmp_path / "sends.parquet").exists() and not (tmp_path / "sends.jsonl").exists()


def test_client_process_parts_are_read_and_compacted_together(tmp_path):
    main, part = HistoryWriter(tmp_path), HistoryWriter(tmp_path, part="consumer-0")
    main.write("reads", {"reader": "drain", "offset": 0})
    part.write_many("reads", [{"reader": "consumer-0", "offset": o} for o in range(3)])
    part.close(compact=False)
    with (tmp_path / "reads.consumer-0.jsonl").open("a") as f:
        f.write('{"reader": "consumer-0", "off')  # the process was SIGKILLed mid-write
    main.flush()
    assert read_jsonl(tmp_path, "reads").num_rows == 4
    main.close()
    assert pq.read_table(tmp_path / "reads.parquet").num_rows == 4 and not list(tmp_path.glob("*.jsonl"))


DUMP = """Dumping /var/lib/kafka/data/chaos-2/00000000000000000000.log
Log starting offset: 0
baseOffset: 0 lastOffset: 1 count: 2 baseSequence: 0 lastSequence: 1 producerId: 7 producerEpoch: 0 \
partitionLeaderEpoch: 4 isTransactional: false
| offset: 0 CreateTime: 1 keySize: -1 valueSize: 20 sequence: 0 headerKeys: [] payload: {p0}
| offset: 1 CreateTime: 1 keySize: 3 valueSize: 20 sequence: 1 headerKeys: [] key: 0-1 payload: {p1}
"""


def test_parse_dump_log_segments_output():
    text = DUMP.format(p0=encode(0, 5).decode(), p1="not ours")
    rows = parse_dump(text, broker=2)
    assert [(r["topic"], r["partition"], r["offset"], r["leader_epoch"], r["producer"], r["seq"]) for r in rows] == [
        ("chaos", 2, 0, 4, 0, 5), ("chaos", 2, 1, 4, -1, -1)]
    assert rows[0]["checksum_ok"] and not rows[1]["checksum_ok"]


def test_same_seed_same_schedule_and_jitter_moves_it():
    faults = [FaultSpec(fault="kill", every=10, jitter=3, after=2, **{"for": 2}),
              FaultSpec(fault="pause", every=7, after=1, **{"for": 1})]
    a, b = schedule.plan(faults, 60, 1), schedule.plan(faults, 60, 1)
    assert a == b and len(a) > 5
    assert a != schedule.plan(faults, 60, 2)
    assert all(op.at + op.hold <= 60 for op in a)


def test_schedule_roundtrip(tmp_path):
    ops_ = schedule.plan([FaultSpec(fault="kill")], 60, 7)
    schedule.save(ops_, tmp_path / "s.json")
    assert schedule.load(tmp_path / "s.json") == ops_


def test_every_fault_in_the_scenario_format_has_an_implementation():
    assert set(ops.REGISTRY) == set(FAULTS)
