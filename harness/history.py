"""The run's history: append-only JSON Lines flushed as it goes, compacted to Parquet at the end.

One writer serves every table; the column lists here are the contract with `reports.analysis`.
"""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Callable
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.json as pajson
import pyarrow.parquet as pq

# Table -> ordered (column, type). Types: int (64-bit), str, bool.
TABLES: dict[str, list[tuple[str, str]]] = {
    "sends": [("producer", "int"), ("seq", "int"), ("key", "str"), ("topic", "str"), ("partition", "int"),
              ("t_invoke", "int"), ("t_complete", "int"), ("outcome", "str"), ("error", "str"), ("offset", "int")],
    "reads": [("reader", "str"), ("phase", "str"), ("poll", "int"), ("t", "int"), ("topic", "str"),
              ("partition", "int"), ("offset", "int"), ("producer", "int"), ("seq", "int"), ("checksum_ok", "bool")],
    "faults": [("t_start", "int"), ("t_end", "int"), ("fault", "str"), ("targets", "str"), ("detail", "str")],
    "metadata": [("t", "int"), ("topic", "str"), ("partition", "int"), ("leader", "int"), ("isr", "str"),
                 ("controller", "int")],
    "replicas": [("broker", "int"), ("topic", "str"), ("partition", "int"), ("offset", "int"),
                 ("leader_epoch", "int"), ("producer", "int"), ("seq", "int"), ("checksum_ok", "bool")],
    # Beyond DESIGN.md's five: client lifecycle (assign, revoke, producer recreated), the final drain's end
    # offsets and whether it reached them, and liveness findings. The analyzer needs the drain's ends.
    "events": [("t", "int"), ("source", "str"), ("kind", "str"), ("topic", "str"), ("partition", "int"),
               ("offset", "int"), ("detail", "str")],
}
ARROW = {"int": pa.int64(), "str": pa.string(), "bool": pa.bool_()}


def _line(row: dict) -> bytes:
    return orjson.dumps(row, option=orjson.OPT_APPEND_NEWLINE)


def jsonl(rows: list[dict]) -> bytes:
    """JSON Lines of flat rows with one orjson call for the batch (a call per row costs ~10x more), split where
    rows meet; if a string holds the `},{` of a row boundary the split is ambiguous and each row is dumped alone."""
    body = orjson.dumps(rows)[1:-1]
    if body.count(b"},{") == len(rows) - 1:
        return body.replace(b"},{", b"}\n{") + b"\n"
    return b"".join(map(_line, rows))


def _take(queue: list) -> list:
    """Remove and return what a queue holds now; appends made meanwhile stay queued."""
    taken = queue[:]
    del queue[:len(taken)]
    return taken


now_ns = time.monotonic_ns  # the history clock: CLOCK_MONOTONIC in ns, shared by every process on the machine


def arrow_schema(table: str) -> pa.Schema:
    return pa.schema([(name, ARROW[kind]) for name, kind in TABLES[table]])


def jsonl_files(directory: Path, table: str) -> list[Path]:
    """A table's JSON Lines: the run's own `<table>.jsonl` and one `<table>.<part>.jsonl` per client process."""
    main = directory / f"{table}.jsonl"
    return ([main] if main.exists() else []) + sorted(directory.glob(f"{table}.*.jsonl"))


class HistoryWriter:
    """Buffers rows per table and appends them as JSON Lines every `flush_s` (and on close).

    A client process writes its own `part` (`<table>.<part>.jsonl`), so a SIGKILL tears at most its own last line.
    """

    def __init__(self, directory: Path, flush_s: float = 0.2, part: str = "") -> None:
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        # Rows are appended without a lock and flushed by copying then deleting a prefix: each of these list
        # operations is atomic under the GIL, so an append racing a flush lands in this flush or the next.
        self._buf: dict[str, list[dict]] = {t: [] for t in TABLES}
        self._lines: dict[str, list[bytes]] = {t: [] for t in TABLES}
        self._flushing = threading.Lock()
        suffix = f".{part}" if part else ""
        self._files = {t: open(self.dir / f"{t}{suffix}.jsonl", "ab") for t in TABLES}  # noqa: SIM115
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, args=(flush_s,), name="history-flush", daemon=True)
        self._thread.start()

    def write(self, table: str, row: dict) -> None:
        """Queue one row (readers ignore columns outside the table's schema; missing ones are null)."""
        self._buf[table].append(row)

    def write_many(self, table: str, rows: list[dict]) -> None:
        """Queue several rows of one table."""
        self._buf[table].extend(rows)

    def line_writer(self, table: str) -> Callable[[bytes], None]:
        """What queues one row of `table` that its caller already encoded as a JSON object and a newline: the
        producer's hot path, one C call per row."""
        return self._lines[table].append

    def flush(self) -> None:
        """Append every queued row; one write per table, so a kill leaves at most one partial line.
        When it returns, every row queued before the call is in the files (flushes run one at a time)."""
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
            compact_dir(self.dir)


def read_jsonl(directory: Path, table: str) -> pa.Table:
    """Read all of a table's JSON Lines, dropping each file's partial last line left by a killed writer."""
    schema = arrow_schema(table)
    raw = b""
    for path in jsonl_files(directory, table):
        text = path.read_bytes()
        raw += text[: text.rfind(b"\n") + 1]
    if not raw:
        return schema.empty_table()
    return pajson.read_json(io.BytesIO(raw), parse_options=pajson.ParseOptions(explicit_schema=schema,
                                                                             unexpected_field_behavior="ignore"))


def compact_dir(directory: Path) -> None:
    """Turn each table's JSON Lines into `<table>.parquet` (atomically), then remove the JSON Lines."""
    for table in TABLES:
        sources = jsonl_files(directory, table)
        if not sources:
            continue
        tmp = directory / f".{table}.parquet.tmp"
        pq.write_table(read_jsonl(directory, table), tmp)
        tmp.rename(directory / f"{table}.parquet")
        for src in sources:
            src.unlink()
