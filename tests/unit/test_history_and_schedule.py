"""History writing/compaction, payload checksums, replica segment parsing and seeded schedules."""

from __future__ import annotations

import io
import os
import signal
import struct
import sys
import tarfile
import tempfile
import threading
from collections.abc import Iterable
from pathlib import Path

import orjson
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.util import calc_crc32c

from contracts import history
from contracts.errors import ClusterError
from contracts.faultkinds import FAULT_KINDS
from contracts.history import TABLES, HistoryWriter, jsonl, read_jsonl
from contracts.payload import decode, encode, seq_of
from faults import plan, schedule
from faults.registry import OPS
from harness import cluster as cluster_module
from harness import labels
from harness.cluster import Cluster, ClusterSpec
from harness.node import KafkaNode
from harness.replicas import node_segments, parse_segment, segments_of_tar
from kchaos.catalog import fault_spec


def test_payload_roundtrip_and_damage_detected():
    v = encode(3, 1234, 80)
    assert len(v) >= 80 and decode(v) == (3, 1234, True)
    assert seq_of(v) == 1234 and seq_of(encode(0, 2000000017, 8)) == 2000000017
    damaged = v[:-1] + b"y"
    assert decode(damaged) == (3, 1234, False)
    assert decode(v.replace(b"1234", b"1235", 1)) == (3, 1235, False)
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


def test_a_history_compacts_a_block_at_a_time_with_every_whole_line_and_no_torn_one(
        tmp_path, monkeypatch):
    # lines of about 120 bytes: most blocks hold none whole
    monkeypatch.setattr(history, "BLOCK_BYTES", 100)
    w = HistoryWriter(tmp_path)
    w.write_many(
        "sends",
        [{"producer": 1, "seq": s, "outcome": "ok", "error": "x" * (s % 7)} for s in range(50)])
    w.flush()
    with (tmp_path / "sends.jsonl").open("a") as f:
        f.write('{"producer": 1, "seq": 50, "outc')
    w.close()
    table = pq.read_table(tmp_path / "sends.parquet")
    assert table.column("seq").to_pylist() == list(range(50)) and table.num_rows == 50


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
    assert pq.read_table(tmp_path
                         / "reads.parquet").num_rows == 4 and not list(tmp_path.glob("*.jsonl"))


def batch(base_offset: int, epoch: int, values: list[bytes], control: bool = False) -> bytes:
    """One v2 record batch as a broker stores it: its base offset and partition leader epoch set in
    place."""
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=control,
                                  producer_id=7, producer_epoch=0, base_sequence=base_offset,
                                  batch_size=1 << 20)
    for i, v in enumerate(values):
        b.append(i, timestamp=1, key=None, value=v, headers=[])
    data = b.build()
    struct.pack_into(">q", data, 0, base_offset)
    struct.pack_into(">i", data, 12, epoch)
    if control:  # attributes bit 5, and the crc32c over attributes..end that covers it
        struct.pack_into(">h", data, 21, struct.unpack_from(">h", data, 21)[0] | 0x20)
        struct.pack_into(">I", data, 17, calc_crc32c(bytes(data[21:])))
    return bytes(data)


def rows_of(lines: Iterable[bytes]) -> list[dict]:
    """`replicas` rows from their JSON lines, each checked against the table's columns."""
    rows = [orjson.loads(line) for line in lines]
    assert all(list(r) == [name for name, _ in TABLES["replicas"]] for r in rows)
    return rows


def tar_of(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as t:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return out.getvalue()


def test_segment_files_give_offset_epoch_and_payload_of_each_record():
    seg = batch(0, 4, [encode(0, 5), b"not ours"]) + batch(2, 5, [encode(1, 9)])
    # a torn batch at the end
    rows = rows_of(parse_segment(seg + seg[:30], broker=2, topic="chaos", partition=2))
    assert [(r["broker"], r["partition"], r["offset"], r["leader_epoch"], r["producer"], r["seq"],
             r["checksum_ok"])
            for r in rows] == [(2, 2, 0, 4, 0, 5, True), (2, 2, 1, 4, -1, -1, False),
                               (2, 2, 2, 5, 1, 9, True)]
    # Kafka's producer fields: the batch's id and epoch, base sequence (here its base offset) plus
    # the record's place
    assert [(r["producer_id"], r["producer_epoch"], r["sequence"], r["transactional"])
            for r in rows] == [
        (7, 0, 0, False), (7, 0, 1, False), (7, 0, 2, False)]


def test_control_batches_and_other_directories_are_skipped(tmp_path):
    archive = tmp_path / "kafka-1.tar"
    archive.write_bytes(tar_of({
        "chaos-0/00000000000000000000.log": batch(0, 1, [encode(0, 0)]) + batch(1, 1, [b""], True),
        "chaos-1/00000000000000000000.log": batch(0, 1, [encode(0, 1)]),
        "chaos-1.3f2a-delete/00000000000000000000.log": batch(0, 0, [encode(0, 2)]),
        "chaos-other-0/00000000000000000000.log": batch(0, 0, [encode(0, 3)])}))
    rows = [r for s in segments_of_tar(archive, "chaos")
            for r in rows_of(parse_segment(s.read(), broker=1, topic="chaos",
                                           partition=s.partition))]
    assert sorted((r["partition"], r["offset"], r["seq"]) for r in rows) == [(0, 0, 0), (1, 0, 1)]


def test_replicas_holding_the_same_batch_share_its_parse_and_a_diverging_one_is_read_as_it_is():
    same, theirs = batch(0, 3, [encode(0, 0), encode(0, 1)]), batch(2, 3, [encode(1, 7)])
    parsed: dict = {}
    leader = rows_of(parse_segment(same + theirs, broker=1, topic="chaos", partition=0,
                                   parsed=parsed))
    follower = rows_of(parse_segment(same + batch(2, 3, [encode(1, 8)]), broker=2, topic="chaos",
                                     partition=0, parsed=parsed))
    other_partition = rows_of(parse_segment(same, broker=2, topic="chaos", partition=1,
                                            parsed=parsed))
    assert [(r["offset"], r["seq"]) for r in leader] == [(0, 0), (1, 1), (2, 7)]
    assert [(r["broker"], r["offset"], r["seq"]) for r in follower] == [
        (2, 0, 0), (2, 1, 1), (2, 2, 8)]
    assert [(r["partition"], r["offset"]) for r in other_partition] == [(1, 0), (1, 1)]
    # the shared batch once per partition, and each of the two diverging ones
    assert len(parsed) == 4


class FlakyBroker:
    """A broker whose segment tar, copied out, comes back as the given bytes in turn."""

    alias, node_id = "kafka-1", 1

    def __init__(self, *copies: bytes) -> None:
        self.copies = list(copies)

    def sh(self, script: str) -> tuple[int, str]:
        return 0, ""

    def copy_file(self, path: str, dest: Path) -> None:
        dest.write_bytes(self.copies.pop(0))


def test_a_segment_copy_cut_short_is_read_again_and_three_in_a_row_are_a_cluster_error(tmp_path):
    whole = tar_of({"chaos-0/00000000000000000000.log": batch(0, 1, [encode(0, 0), encode(0, 1)])})
    (segment,) = node_segments(FlakyBroker(whole[:700], whole), "chaos", tmp_path)
    rows = rows_of(parse_segment(segment.read(), broker=1, topic="chaos",
                                 partition=segment.partition))
    assert [(r["offset"], r["seq"]) for r in rows] == [(0, 0), (1, 1)]
    with pytest.raises(ClusterError, match="cut short 3 times"):
        node_segments(FlakyBroker(whole[:700], whole[:700], whole[:700], whole), "chaos", tmp_path)


def test_same_seed_same_schedule_and_jitter_moves_it():
    faults = [fault_spec(fault="kill", every=10, jitter=3, after=2, **{"for": 2}),
              fault_spec(fault="pause", every=7, after=1, **{"for": 1})]
    a, b = plan.plan(faults, 60, 1), plan.plan(faults, 60, 1)
    assert a == b and len(a) > 5
    assert a != plan.plan(faults, 60, 2)
    assert all(op.at + op.hold <= 60 for op in a)


def test_schedule_roundtrip(tmp_path):
    ops_ = plan.plan([fault_spec(fault="kill")], 60, 7)
    plan.save(ops_, tmp_path / "s.json")
    assert plan.load(tmp_path / "s.json") == ops_


def test_a_line_cannot_claim_a_broker_another_line_holds_until_it_is_released(tmp_path):
    nemesis = schedule.Nemesis(None, "chaos", [], [], 1, HistoryWriter(tmp_path))
    assert nemesis.claim(0, [2]) == []
    assert nemesis.claim(1, [1, 2]) == [2] and nemesis.held == {2: 0}  # all or nothing
    assert nemesis.claim(0, [2, 3]) == []  # a line's own next op
    nemesis.release(0)
    assert nemesis.held == {} and nemesis.claim(1, [1, 2]) == []


def test_an_op_that_picks_its_own_brokers_holds_them_all_and_waits_for_none(tmp_path):
    from types import SimpleNamespace

    cluster = SimpleNamespace(node_ids=lambda: [1, 2, 3])
    faults = [fault_spec(fault="rolling-restart"), fault_spec(fault="kill")]
    history = HistoryWriter(tmp_path)
    nemesis = schedule.Nemesis(cluster, "chaos", faults,
                               [plan.PlannedOp(1.0, 0, "rolling-restart", 0.0)], 1, history)
    nemesis.t0_ns = 0
    nemesis.claim(1, [2])  # the kill line holds broker 2
    nemesis.fire(plan.PlannedOp(1.0, 0, "rolling-restart", 0.0))
    history.close(compact=False)
    (row,) = read_jsonl(tmp_path, "faults").to_pylist()
    assert row["outcome"] == "skipped" and "brokers [2] were held" in row["detail"], row
    assert nemesis.held == {2: 1}


def test_every_fault_kind_is_writable_in_a_scenario_and_has_an_op():
    for name, kind in FAULT_KINDS.items():
        spec = fault_spec(fault=name, **({"to": "4.4.0"} if "to" in kind.params else {}))
        assert callable(OPS[name]) and spec.target == kind.default_target


def test_rows_written_while_flushes_run_are_each_flushed_once(tmp_path):
    w = HistoryWriter(tmp_path, flush_s=60)
    write_line = w.line_writer("sends")

    def writer(part: int) -> None:
        for i in range(20_000):
            if i % 2:
                write_line(b'{"producer":%d,"seq":%d}\n' % (part, i))
            else:
                w.write("sends", {"producer": part, "seq": i})

    threads = [threading.Thread(target=writer, args=(p,)) for p in range(3)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads switch as often as they can, to meet every race
    try:
        for t in threads:
            t.start()
        while any(t.is_alive() for t in threads):
            w.flush()
    finally:
        sys.setswitchinterval(interval)
    w.close(compact=False)
    rows = read_jsonl(tmp_path, "sends").select(["producer", "seq"]).to_pylist()
    assert sorted((r["producer"], r["seq"]) for r in rows) == [
        (p, i) for p in range(3) for i in range(20_000)]


def test_a_signal_during_compaction_is_acted_on_once_every_table_is_compacted(
        tmp_path, monkeypatch):
    w = HistoryWriter(tmp_path)
    w.write("sends", {"producer": 0, "seq": 1})
    compact = history.compact_dir

    def interrupted(directory):
        # as Ctrl-C to the process group, half-way through a run's close
        os.kill(os.getpid(), signal.SIGINT)
        compact(directory)

    monkeypatch.setattr(history, "compact_dir", interrupted)
    # Python's own, whatever ran before
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            w.close()
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, before)
    assert not list(tmp_path.glob("*.jsonl"))
    assert pq.read_table(tmp_path / "sends.parquet").column("seq").to_pylist() == [1]


class DumpedBroker(FlakyBroker):
    """A running broker whose segment tar comes back as given."""

    def __init__(self, node_id: int, *copies: bytes) -> None:
        super().__init__(*copies)
        self.node_id, self.alias = node_id, f"kafka-{node_id}"

    def state(self) -> str:
        return "running"


def test_a_dump_hands_on_rows_by_partition_in_chunks_and_nothing_when_a_copy_fails(monkeypatch,
                                                                                   tmp_path):
    archive = tar_of({"chaos-0/00000000000000000000.log": batch(0, 1, [encode(0, 0), encode(0, 2)]),
                      "chaos-1/00000000000000000000.log": batch(0, 1, [encode(0, 1)])})
    monkeypatch.setattr(cluster_module, "ROWS_AT_ONCE", 2)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    cluster = Cluster.__new__(Cluster)
    cluster.spec = ClusterSpec(run_id="r1")
    cluster.nodes = [DumpedBroker(1, archive), DumpedBroker(2, archive)]
    chunks: list[list[dict]] = []
    cluster.dump_replica_logs("chaos", lambda lines: chunks.append(rows_of(lines)))
    assert [[(r["partition"], r["broker"], r["seq"]) for r in c] for c in chunks] == [
        [(0, 1, 0), (0, 1, 2)], [(0, 2, 0), (0, 2, 2)], [(1, 1, 1), (1, 2, 1)]]
    cluster.nodes = [DumpedBroker(1, archive), DumpedBroker(2, *[archive[:700]] * 3)]
    chunks.clear()
    with pytest.raises(ClusterError, match="cut short"):
        cluster.dump_replica_logs("chaos", lambda lines: chunks.append(rows_of(lines)))
    assert chunks == [] and not list(tmp_path.iterdir())  # the segment copies are gone either way


def test_a_copied_out_file_is_streamed_whole_through_chunks_of_any_size(tmp_path):
    inner = os.urandom(3_000_001)
    outer = tar_of({"kchaos-segments.tar": inner})

    class Archived:
        def get_archive(self, path: str):
            return (outer[i:i + 65_537] for i in range(0, len(outer), 65_537)), {}

    node = KafkaNode.__new__(KafkaNode)
    node._container = Archived()
    node.copy_file("/tmp/kchaos-segments.tar", tmp_path / "copy.tar")
    assert (tmp_path / "copy.tar").read_bytes() == inner


def test_cleaning_up_removes_a_killed_runs_scratch_directory_and_only_its_own(
        tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    for run in ("r1", "r2"):
        (labels.scratch(run) / "kafka-1.tar").parent.mkdir()
        (labels.scratch(run) / "kafka-1.tar").write_bytes(b"x")
    labels.clean_scratch("r1")
    assert not labels.scratch("r1").exists() and labels.scratch("r2").exists()
    labels.clean_scratch()
    assert not list(tmp_path.iterdir())
