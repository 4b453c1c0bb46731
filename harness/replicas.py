"""Read every replica's records straight from a broker's segment files, for the analyzer's `replicas` table."""

from __future__ import annotations

import io
import re
import tarfile
from typing import TYPE_CHECKING

from kafka.record.memory_records import MemoryRecords
from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_fixed

from harness.errors import ClusterError
from workloads.payload import decode

if TYPE_CHECKING:
    from harness.node import KafkaNode

DATA = "/var/lib/kafka/data"
SEGMENT = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)/\d+\.log$")  # skips -delete and -future directories


def parse_segment(data: bytes, broker: int, topic: str, partition: int) -> list[dict]:
    """Rows (broker, topic, partition, offset, leader_epoch, producer, seq, checksum_ok) of one segment file.
    Control batches (transaction markers) carry no payload and are skipped; a torn last batch is ignored."""
    rows: list[dict] = []
    batches = MemoryRecords(data)
    while (batch := batches.next_batch()) is not None:
        if batch.is_control_batch:
            continue
        for record in batch:
            d = decode(record.value)
            rows.append({"broker": broker, "topic": topic, "partition": partition, "offset": record.offset,
                         "leader_epoch": batch.leader_epoch, "producer": d.producer if d else -1,
                         "seq": d.seq if d else -1, "checksum_ok": bool(d and d.checksum_ok)})
    return rows


def parse_segments_tar(archive: bytes, broker: int, topic: str) -> list[dict]:
    """Rows of every segment of the topic in a tar of `<topic>-<partition>/<base offset>.log` files."""
    rows: list[dict] = []
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        for member in tar:
            m = SEGMENT.match(member.name)
            if m and m["topic"] == topic and (f := tar.extractfile(member)) is not None:
                rows += parse_segment(f.read(), broker, topic, int(m["partition"]))
    return rows


def dump_node_replicas(node: KafkaNode, topic: str, attempts: int = 3) -> list[dict]:
    """Copy the topic's segment files out of one broker (as a tar) and read their records. A copy can come back
    cut short (docker exec output, a segment a follower truncates while tar reads it), so it is tried again."""
    retrying = Retrying(stop=stop_after_attempt(attempts), wait=wait_fixed(1.0), reraise=True,
                        retry=retry_if_exception_type((tarfile.TarError, ClusterError)))
    try:
        return retrying(_read_segments, node, topic)
    except tarfile.TarError as exc:
        raise ClusterError(f"the segments of {topic} copied out of {node.alias} were cut short {attempts} times "
                           f"({exc})") from exc


def _read_segments(node: KafkaNode, topic: str) -> list[dict]:
    script = f'cd {DATA} || exit 3; set -- {topic}-*/*.log; [ -e "$1" ] || exit 0; exec tar -cf - "$@"'
    code, (out, err) = node.container.exec_run(["sh", "-c", script], user="root", demux=True)
    if code != 0:
        raise ClusterError(f"reading the segments of {topic} on {node.alias} failed (exit {code}): "
                           f"{(err or b'')[-300:]!r}")
    return parse_segments_tar(out, node.node_id, topic) if out else []
