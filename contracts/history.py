"""The run's history: append-only JSON Lines flushed as it goes, compacted to Parquet at the end.

One writer serves every table; the tables, their columns and the event kinds here are the contract
with `reports.analysis`, documented for users in docs/history-format.md.
"""

from __future__ import annotations

import io
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from enum import StrEnum
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.json as pajson
import pyarrow.parquet as pq

from contracts import signals

# Table -> ordered (column, type). Types: int (64-bit), str, bool.
TABLES: dict[str, list[tuple[str, str]]] = {
    "sends": [("producer", "int"), ("seq", "int"), ("key", "str"), ("topic", "str"),
              ("partition", "int"), ("t_invoke", "int"), ("t_complete", "int"), ("outcome", "str"),
              ("error", "str"), ("offset", "int"), ("txn", "int")],
    # One row per transaction a transactional producer began, written when its fate is known to the
    # client.
    "txns": [("producer", "int"), ("txn", "int"), ("t_begin", "int"), ("t_commit", "int"),
             ("t_end", "int"), ("fate", "str"), ("error", "str")],
    # One row per record an eos-copy stage produced to its output topic: the input position it
    # copies, where the copy was acknowledged, and the stage's transaction (`copy_txns`).
    "copies": [("copier", "int"), ("txn", "int"), ("in_partition", "int"), ("in_offset", "int"),
               ("topic", "str"), ("partition", "int"), ("offset", "int"), ("outcome", "str"),
               ("error", "str"), ("t", "int")],
    "copy_txns": [("copier", "int"), ("txn", "int"), ("t_begin", "int"), ("t_commit", "int"),
                  ("t_end", "int"), ("fate", "str"), ("error", "str"), ("records", "int")],
    "reads": [("reader", "str"), ("phase", "str"), ("poll", "int"), ("t", "int"), ("topic", "str"),
              ("partition", "int"), ("offset", "int"), ("producer", "int"), ("seq", "int"),
              ("checksum_ok", "bool"),
              ("pos", "int")],  # the record's place in its poll, from 0 (null in older histories)
    # One row per record a share consumer processed (KIP-932): its delivery count and the
    # acknowledgement the consumer chose for it.
    "shares": [("reader", "str"), ("phase", "str"), ("poll", "int"), ("t", "int"),
               ("topic", "str"), ("partition", "int"), ("offset", "int"), ("producer", "int"),
               ("seq", "int"), ("checksum_ok", "bool"), ("delivery", "int"), ("ack", "str")],
    # How a share consumer's acknowledgements of one poll ended: `sent` (partition -1) before they
    # go out, then `ok` or `fail` per partition.
    "share_acks": [("reader", "str"), ("poll", "int"), ("topic", "str"), ("partition", "int"),
                   ("t", "int"), ("outcome", "str"), ("error", "str")],
    "faults": [("t_start", "int"), ("t_end", "int"), ("fault", "str"), ("targets", "str"),
               ("detail", "str"), ("line", "int"), ("planned", "int"), ("outcome", "str")],
    "metadata": [("t", "int"), ("topic", "str"), ("partition", "int"), ("leader", "int"),
                 ("isr", "str"), ("controller", "int")],
    "replicas": [("broker", "int"), ("topic", "str"), ("partition", "int"), ("offset", "int"),
                 ("leader_epoch", "int"), ("producer", "int"), ("seq", "int"),
                 ("checksum_ok", "bool"),
                 # the batch's Kafka producer id and epoch, the record's producer sequence (-1: not
                 # idempotent)
                 ("producer_id", "int"), ("producer_epoch", "int"), ("sequence", "int"),
                 ("transactional", "bool")],
    # What happened to clients and to the run itself: one row per Event below.
    "events": [("t", "int"), ("source", "str"), ("kind", "str"), ("topic", "str"),
               ("partition", "int"), ("offset", "int"), ("detail", "str")],
}
ARROW = {"int": pa.int64(), "str": pa.string(), "bool": pa.bool_()}
# a send refused before a partition was chosen, an event about no partition in particular
NO_PARTITION = -1
# a send acked without an offset (acks=0, or after a failover), an event about no offset
NO_OFFSET = -1
# a send outside any transaction (`sends.txn`; null in histories written before transactions)
NO_TXN = -1
NO_COMMIT = -1  # a transaction whose producer never asked to commit it (`txns.t_commit`)
# A restarted client (after a hung call or a kill) is a new process that remembers nothing of its
# predecessor's: incarnation i numbers its seqs, transactions and polls from i * NUMBERING_STRIDE,
# so no (producer, seq) or (producer, txn) of one incarnation is reused by the next (2000000017 is
# the third process's send 17), and a share member's poll names its incarnation.
NUMBERING_STRIDE = 10**9
BLOCK_BYTES = 64 << 20  # JSON Lines read at a time when a history is compacted


class Fate(StrEnum):
    """How a transaction ended, as its producer learned it (`txns.fate`)."""

    COMMITTED = "committed"  # commit_transaction returned
    ABORTED = "aborted"  # abort_transaction returned (chosen, or after an abortable error)
    # the outcome is not known (a fatal error, a commit that timed out until the run ended)
    UNKNOWN = "unknown"


class Event(StrEnum):
    """Every kind of `events` row; docs/history-format.md says what each one's columns mean."""

    # a reader was given a partition (offset: where it starts, -1001 = the beginning)
    ASSIGN = "assign"
    REVOKE = "revoke"  # a group member gave a partition up (a rebalance)
    LOST = "lost"  # a group member lost a partition without giving it up (session expired)
    FINAL_END = "final-end"  # the drain's end offset of a partition; detail reached | not-reached
    FINAL_START = "final-start"  # a partition's log start offset when the drain ended
    # the topic's retention as the brokers apply it (detail: JSON), and a bound on a record's bytes
    TOPIC_CONFIG = "topic-config"
    # a segment appeared in or left the remote tier (offset: its base offset; detail: JSON)
    REMOTE_UPLOADED = "remote-uploaded"
    REMOTE_DELETED = "remote-deleted"
    LOG_START = "log-start"  # a partition's log start offset moved (offset: where to)
    # every running broker's segment files were read into `replicas`
    REPLICAS_DUMPED = "replicas-dumped"
    REPLICAS_FAILED = "replicas-failed"  # they could not be; detail says why
    COMMITTED = "committed"  # the group's final committed offset of a partition (-1: none)
    COMMITTED_UNKNOWN = "committed-unknown"  # the committed offsets could not be read
    # the eos-copy group's final committed input offset of a partition
    COPY_COMMITTED = "copy-committed"
    # an eos-copy instance went back to its group's committed offsets after an abort
    REWOUND = "rewound"
    # a share group's share-partition start offset after its final drain (-1: not read)
    SHARE_START = "share-start"
    # what the cluster never reached: a full ISR, a migration's metadata copy, a voter change
    LIVENESS = "liveness"
    NODE_EXIT = "node-exit"  # a Kafka node ended its own process (detail: the node: its log line)
    SAMPLE_ERROR = "sample-error"  # the metadata sampler could not sample
    CLIENT_ERROR = "client-error"  # a workload client raised (recorded, the client goes on)
    FATAL = "fatal"  # a producer's fatal error (it is recreated)
    RECREATED = "recreated"  # a producer was recreated after a fatal error
    # a client gave up after too many errors, or its thread ended before it was told to stop
    STOPPED = "stopped"
    UNFLUSHED = "unflushed"  # a producer closed with sends that never got a delivery report
    # the transaction protocol a transactional producer ran from transaction `offset` on (detail:
    # v1, or v2 for KIP-890's), as its client says
    TXN_PROTOCOL = "txn-protocol"
    # a client call outlived its own timeout; the client's process exits and is restarted
    HUNG = "hung"
    # a producer handle's librdkafka request counters so far (detail: JSON), when they moved
    REQUESTS = "requests"
    # resident bytes of the harness process and of its client processes (detail: JSON), each minute
    MEMORY = "memory"


CLOCK_MARGIN_MS = 1000  # between the history's clock and the brokers' record timestamps


@dataclass(frozen=True)
class Retention:
    """A `topic-config` event's detail: the topic's retention as its brokers apply it (-1: none),
    and an upper bound on one record's bytes in a segment."""

    ms: int
    bytes: int
    record_bytes_max: int

    def detail(self) -> str:
        return json.dumps(asdict(self))


@dataclass(frozen=True)
class RemoteSegment:
    """One log segment in the remote tier: its partition, base offset, id and size."""

    topic: str
    partition: int
    base_offset: int
    segment: str
    bytes: int

    def detail(self) -> str:
        return json.dumps({"segment": self.segment, "bytes": self.bytes})


class Outcome(StrEnum):
    """How a planned fault op ended (`faults.outcome`)."""

    FIRED = "fired"  # it ran and took effect
    SKIPPED = "skipped"  # nothing matched its target when it was due (detail: why)
    FAILED = "failed"  # it raised (detail: error)
    NO_EFFECT = "no-effect"  # it ran, but what it should have broken was not broken (detail: error)
    NOT_REACHED = "not-reached"  # the run ended before it was due, or while its line was busy


CLIENT_TROUBLE = (Event.CLIENT_ERROR, Event.FATAL, Event.RECREATED, Event.STOPPED, Event.UNFLUSHED,
                  Event.HUNG)


def _line(row: dict) -> bytes:
    return orjson.dumps(row, option=orjson.OPT_APPEND_NEWLINE)


def jsonl(rows: list[dict]) -> bytes:
    """JSON Lines of flat rows with one orjson call for the batch (a call per row costs ~10x more),
    split where rows meet; if a string holds the `},{` of a row boundary the split is ambiguous and
    each row is dumped alone."""
    body = orjson.dumps(rows)[1:-1]
    if body.count(b"},{") == len(rows) - 1:
        return body.replace(b"},{", b"}\n{") + b"\n"
    return b"".join(map(_line, rows))


def _take(queue: list) -> list:
    """Remove and return what a queue holds now; appends made meanwhile stay queued."""
    taken = queue[:]
    del queue[:len(taken)]
    return taken


# the history clock: CLOCK_MONOTONIC in ns, shared by every process on the machine
now_ns = time.monotonic_ns


def arrow_schema(table: str) -> pa.Schema:
    """A table's columns as an Arrow schema."""
    return pa.schema([(name, ARROW[kind]) for name, kind in TABLES[table]])


def jsonl_files(directory: Path, table: str) -> list[Path]:
    """A table's JSON Lines: the run's own `<table>.jsonl` and one `<table>.<part>.jsonl` per client
    process."""
    main = directory / f"{table}.jsonl"
    return ([main] if main.exists() else []) + sorted(directory.glob(f"{table}.*.jsonl"))


class HistoryWriter:
    """Buffers rows per table and appends them as JSON Lines every `flush_s` (and on close).

    A client process writes its own `part` (`<table>.<part>.jsonl`), so a SIGKILL tears at most its
    own last line.
    """

    def __init__(self, directory: Path, flush_s: float = 0.2, part: str = "") -> None:
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        # Rows are appended without a lock and flushed by copying then deleting a prefix: each of
        # these list operations is atomic under the GIL, so an append racing a flush lands in this
        # flush or the next.
        self._buf: dict[str, list[dict]] = {t: [] for t in TABLES}
        self._lines: dict[str, list[bytes]] = {t: [] for t in TABLES}
        self._flushing = threading.Lock()
        suffix = f".{part}" if part else ""
        paths = {t: self.dir / f"{t}{suffix}.jsonl" for t in TABLES}
        self._files = {t: open(path, "ab") for t, path in paths.items()}  # noqa: SIM115
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, args=(flush_s,), name="history-flush",
                                        daemon=True)
        self._thread.start()

    def write(self, table: str, row: dict) -> None:
        """Queue one row (readers ignore columns outside the table's schema; missing ones are
        null)."""
        self._buf[table].append(row)

    def write_many(self, table: str, rows: list[dict]) -> None:
        """Queue several rows of one table."""
        self._buf[table].extend(rows)

    def event(self, source: str, kind: Event, *, topic: str = "", partition: int = NO_PARTITION,
              offset: int = NO_OFFSET, detail: str = "", t: int | None = None) -> None:
        """Queue one `events` row, stamped now unless `t` is given."""
        self._buf["events"].append({"t": now_ns() if t is None else t, "source": source,
                                    "kind": kind, "topic": topic, "partition": partition,
                                    "offset": offset, "detail": detail})

    def fault(self, fault: str, t_start: int, targets: list[int], detail: dict, *, line: int = -1,
              planned: int = -1, outcome: Outcome = Outcome.FIRED) -> None:
        """Queue one `faults` row that ends now: the op, its broker targets, what it did (JSON), the
        scenario's fault line it belongs to and when the schedule planned it (-1 for the final
        heal), and how it ended."""
        self._buf["faults"].append({"t_start": t_start, "t_end": now_ns(), "fault": fault,
                                    "targets": ",".join(map(str, targets)),
                                    "detail": json.dumps(detail), "line": line, "planned": planned,
                                    "outcome": outcome})

    def write_lines(self, table: str, lines: list[bytes]) -> None:
        """Queue rows of one table that their caller already encoded, each a JSON object and a
        newline."""
        self._lines[table].extend(lines)

    def line_writer(self, table: str) -> Callable[[bytes], None]:
        """What queues one row of `table` that its caller already encoded as a JSON object and a
        newline: the producer's hot path, one C call per row."""
        return self._lines[table].append

    def flush(self) -> None:
        """Append every queued row; one write per table, so a kill leaves at most one partial line.
        When it returns, every row queued before the call is in the files (flushes run one at a
        time)."""
        with self._flushing:
            for table, f in self._files.items():
                rows, lines = _take(self._buf[table]), _take(self._lines[table])
                if rows or lines:
                    f.write(jsonl(rows) + b"".join(lines) if rows else b"".join(lines))
                    f.flush()

    def _loop(self, every: float) -> None:
        while not self._stop.wait(every):
            self.flush()

    def close(self, compact: bool = True) -> None:
        """Stop the flusher, write what is left, and (by default) compact every table to Parquet."""
        self._stop.set()
        self._thread.join()
        self.flush()
        for f in self._files.values():
            f.close()
        if compact:
            with signals.deferred():
                compact_dir(self.dir)


def row_format(table: str, fixed: dict[str, object]) -> bytes:
    """One row of `table` as a bytes %-format, in the schema's column order: the `fixed` columns
    encoded once, every other one a placeholder (%d for an int column, %s for the JSON bytes of any
    other). The producer's hot path fills it with one % per row, and it cannot drift from the
    schema."""
    parts = []
    for name, kind in TABLES[table]:
        value = orjson.dumps(fixed[name]).replace(
            b"%", b"%%") if name in fixed else b"%d" if kind == "int" else b"%s"
        parts.append(b'"%s":%s' % (name.encode(), value))
    return b"{" + b",".join(parts) + b"}\n"


def _jsonl_blocks(directory: Path, table: str) -> Iterator[pa.Table]:
    """A table's JSON Lines as Arrow tables of about BLOCK_BYTES of lines each, every file's partial
    last line (left by a killed writer) dropped: an hours-long run's history is read a block at a
    time, never whole."""
    options = pajson.ParseOptions(explicit_schema=arrow_schema(table),
                                  unexpected_field_behavior="ignore")
    for path in jsonl_files(directory, table):
        with path.open("rb") as f:
            carry = b""
            while block := f.read(BLOCK_BYTES):
                lines, carry = _split_last(carry + block)
                if lines:
                    yield pajson.read_json(io.BytesIO(lines), parse_options=options)


def _split_last(data: bytes) -> tuple[bytes, bytes]:
    """`data` up to and including its last newline, and the rest."""
    cut = data.rfind(b"\n") + 1
    return data[:cut], data[cut:]


def read_jsonl(directory: Path, table: str) -> pa.Table:
    """Read all of a table's JSON Lines, dropping each file's partial last line left by a killed
    writer."""
    blocks = list(_jsonl_blocks(directory, table))
    return pa.concat_tables(blocks) if blocks else arrow_schema(table).empty_table()


def compact_dir(directory: Path) -> None:
    """Turn each table's JSON Lines into `<table>.parquet` (atomically, a block at a time), then
    remove the JSON Lines."""
    for table in TABLES:
        sources = jsonl_files(directory, table)
        if not sources:
            continue
        tmp = directory / f".{table}.parquet.tmp"
        with pq.ParquetWriter(tmp, arrow_schema(table)) as writer:
            for block in _jsonl_blocks(directory, table):
                writer.write_table(block)
        tmp.rename(directory / f"{table}.parquet")
        for src in sources:
            src.unlink()


def fault_outcome(row) -> str:
    """A fault row's outcome (a Spark row or a pandas one); rows written before outcomes were
    recorded say it in their detail."""
    if row["outcome"]:
        return row["outcome"]
    detail = json.loads(row["detail"] or "{}")
    return (Outcome.FAILED if "error" in detail else Outcome.SKIPPED if "skipped" in detail
            else Outcome.FIRED)
