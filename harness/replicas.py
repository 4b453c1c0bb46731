"""Read every replica's records out of a broker with DumpLogSegments, for the analyzer's `replicas` table."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from workloads.payload import decode

if TYPE_CHECKING:
    from harness.node import KafkaNode

DATA = "/var/lib/kafka/data"
DUMPING = re.compile(r"^Dumping (?P<path>\S+)")
BATCH = re.compile(r"^baseOffset: \d+ .*partitionLeaderEpoch: (?P<epoch>-?\d+)")
RECORD = re.compile(r"^\| offset: (?P<offset>\d+) .*?payload: (?P<payload>.*)$")
SEGMENT_DIR = re.compile(r"/(?P<topic>[^/]+)-(?P<partition>\d+)/\d+\.log$")


def parse_dump(text: str, broker: int) -> list[dict]:
    """Rows (broker, topic, partition, offset, leader_epoch, producer, seq, checksum_ok) from a dump's output."""
    rows: list[dict] = []
    topic, partition, epoch = None, -1, -1
    for line in text.splitlines():
        if m := DUMPING.match(line):
            seg = SEGMENT_DIR.search(m["path"])
            topic, partition = (seg["topic"], int(seg["partition"])) if seg else (None, -1)
        elif m := BATCH.match(line):
            epoch = int(m["epoch"])
        elif (m := RECORD.match(line)) and topic is not None:
            d = decode(m["payload"])
            rows.append({"broker": broker, "topic": topic, "partition": partition, "offset": int(m["offset"]),
                         "leader_epoch": epoch, "producer": d.producer if d else -1, "seq": d.seq if d else -1,
                         "checksum_ok": bool(d and d.checksum_ok)})
    return rows


def dump_tool(version: str) -> str:
    """DumpLogSegments moved from core (Scala) to kafka-tools (Java) in Kafka 4.0."""
    if int(version.split(".")[0]) >= 4:
        return "org.apache.kafka.tools.DumpLogSegments"
    return "kafka.tools.DumpLogSegments"


def dump_node_replicas(node: KafkaNode, topic: str, version: str) -> list[dict]:
    """Run DumpLogSegments over every segment of the topic's replicas on one broker."""
    code, files = node.sh(f"ls {DATA}/{topic}-*/*.log 2>/dev/null | tr '\\n' ','")
    files = files.strip().rstrip(",")
    if not files:
        return []
    code, out = node.sh(f"java -Xmx256m -XX:TieredStopAtLevel=1 -cp '/opt/kafka/libs/*' "
                        f"-Dlog4j2.configurationFile=/etc/kafka/log4j2.properties "
                        f"{dump_tool(version)} --deep-iteration --print-data-log --files {files}")
    if code != 0:
        raise RuntimeError(f"DumpLogSegments failed on {node.alias}: {out[-300:]}")
    return parse_dump(out, node.node_id)
