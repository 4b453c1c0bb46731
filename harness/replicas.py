"""Read every replica's records straight from a broker's segment files, for the analyzer's
`replicas` table."""

from __future__ import annotations

import re
import struct
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from kafka.record.memory_records import MemoryRecords
from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_fixed

from contracts.errors import ClusterError
from contracts.history import row_format
from contracts.payload import decode
from harness.node import KafkaNode

DATA = "/var/lib/kafka/data"
# the tar is made inside the broker, then streamed to a file on this host
COPY = "/tmp/kchaos-segments.tar"
# skips -delete and -future directories
SEGMENT = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)/\d+\.log$")


# (partition, a batch's head) -> its records' cells after (broker, topic, partition), in the
# `replicas` table's column order, booleans as JSON. Followers store the leader's batches byte for
# byte, so the brokers of one dump share one parse of each batch.
Parsed = dict[tuple[int, bytes], list[tuple]]
JSON_BOOL = {True: b"true", False: b"false"}
BATCH_HEAD = struct.Struct(">qi")  # base offset, then the length of the rest of the batch
# A batch's first bytes name it: base offset, length and CRC in every message format (v2: also the
# leader epoch and magic, the CRC at 17..21; v0 and v1: the CRC at 12..16), so the cache keeps 21
# bytes a batch, not its body.
KEY_BYTES = 21


def parse_segment(data: bytes, broker: int, topic: str, partition: int,
                  parsed: Parsed | None = None) -> Iterator[bytes]:
    """The `replicas` rows of one segment file, each a JSON line: each record's place, payload, and
    its batch's Kafka producer id, epoch and the record's sequence (-1 without an idempotent
    producer). Control batches (transaction markers) carry no payload and are skipped; a torn last
    batch is ignored. A batch already in `parsed` (the same batch at the same partition, from
    another replica) is not decoded again."""
    parsed = {} if parsed is None else parsed
    line = row_format("replicas", {"broker": broker, "topic": topic, "partition": partition})
    pos = 0
    while pos + BATCH_HEAD.size <= len(data):
        end = pos + BATCH_HEAD.size + BATCH_HEAD.unpack_from(data, pos)[1]
        if end > len(data):
            break
        key = (partition, data[pos:pos + KEY_BYTES])
        records = parsed.get(key)
        if records is None:
            records = parsed[key] = _records(data[pos:end])
        pos = end
        for cells in records:
            yield line % cells


def _records(raw: bytes) -> list[tuple]:
    batch = MemoryRecords(raw).next_batch()
    # message format v0/v1 (before 0.11) has no control batches, leader epoch or producer fields
    if batch is None or getattr(batch, "is_control_batch", False):
        return []
    epoch, pid = getattr(batch, "leader_epoch", -1), getattr(batch, "producer_id", -1)
    pid_epoch, base_seq = getattr(batch, "producer_epoch", -1), getattr(batch, "base_sequence", -1)
    transactional = JSON_BOOL[bool(getattr(batch, "is_transactional", False))]
    out = []
    for record in batch:
        d = decode(record.value)
        sequence = base_seq + record.offset - batch.base_offset if base_seq >= 0 else -1
        out.append((record.offset, epoch, d.producer if d else -1, d.seq if d else -1,
                    JSON_BOOL[bool(d and d.checksum_ok)], pid, pid_epoch, sequence, transactional))
    return out


@dataclass(frozen=True)
class Segment:
    """One segment file inside a broker's tar on this host, read when its turn comes."""

    partition: int
    tar: Path
    start: int  # where its bytes begin in the tar
    size: int

    def read(self) -> bytes:
        with self.tar.open("rb") as f:
            f.seek(self.start)
            return f.read(self.size)


def segments_of_tar(archive: Path, topic: str) -> list[Segment]:
    """Every segment of the topic in a tar of `<topic>-<partition>/<base offset>.log` files; a tar
    cut short raises tarfile.TarError."""
    segments, length = [], archive.stat().st_size
    with tarfile.open(archive) as tar:
        for member in tar:
            if member.offset_data + member.size > length:
                raise tarfile.ReadError(f"{member.name} is cut short")
            m = SEGMENT.match(member.name)
            if m and m["topic"] == topic and member.isfile():
                segments.append(Segment(int(m["partition"]), archive, member.offset_data,
                                        member.size))
    return segments


def node_segments(node: KafkaNode, topic: str, into: Path, attempts: int = 3) -> list[Segment]:
    """Copy the topic's segment files out of one broker as a tar in directory `into`. A copy can
    come back cut short (a segment a follower truncates while tar reads it), so it is tried
    again."""
    retrying = Retrying(stop=stop_after_attempt(attempts), wait=wait_fixed(1.0), reraise=True,
                        retry=retry_if_exception_type((tarfile.TarError, ClusterError)))
    try:
        return retrying(_copy_segments, node, topic, into / f"{node.alias}.tar")
    except tarfile.TarError as exc:
        raise ClusterError(f"the segments of {topic} copied out of {node.alias} were cut short "
                           f"{attempts} times ({exc})") from exc


def _copy_segments(node: KafkaNode, topic: str, dest: Path) -> list[Segment]:
    script = (f'cd {DATA} || exit 3; rm -f {COPY}; set -- {topic}-*/*.log; [ -e "$1" ] || {{ echo '
              f'none; exit 0; }}; tar -cf {COPY} "$@" 2>&1')
    code, out = node.sh(script)
    if code != 0:
        raise ClusterError(f"reading the segments of {topic} on {node.alias} failed (exit {code}): "
                           f"{out[-300:]!r}")
    if out.strip() == "none":
        return []
    try:
        node.copy_file(COPY, dest)
        return segments_of_tar(dest, topic)
    finally:
        node.sh(f"rm -f {COPY}")
