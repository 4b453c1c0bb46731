"""The run's history: append-only JSON Lines flushed as it goes, compacted to Parquet at the end.

One writer serves every table; the column lists here are the contract with `reports.analysis`.
"""

from __future__ import annotations

import io
import json
import threading
import time
from pathlib import Path

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


def now_ns() -> int:
    """The history clock: CLOCK_MONOTONIC in ns, shared by every process on the machine."""
    return time.monotonic_ns()


def arrow_schema(table: str) -> pa.Schema:
    return pa.schema([(name, ARROW[kind]) for name, kind in TABLES[table]])


class HistoryWriter:
    """Buffers rows per table and appends them as JSON Lines every `flush_s` (and on close)."""

    def __init__(self, directory: Path, flush_s: float = 0.2) -> None:
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self._buf: dict[str, list[dict]] = {t: [] for t in TABLES}
        self._lock = threading.Lock()
        self._files = {t: open(self.dir / f"{t}.jsonl", "a", encoding="utf-8") for t in TABLES}  # noqa: SIM115
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, args=(flush_s,), name="history-flush", daemon=True)
        self._thread.start()

    def write(self, table: str, row: dict) -> None:
        """Queue one row (columns outside the table's schema are dropped when flushed)."""
        with self._lock:
            self._buf[table].append(row)

    def write_many(self, table: str, rows: list[dict]) -> None:
        """Queue several rows of one table."""
        with self._lock:
            self._buf[table].extend(rows)

    def flush(self) -> None:
        """Append every buffered row; one write per table, so a kill leaves at most one partial line."""
        with self._lock:
            pending = {t: rows for t, rows in self._buf.items() if rows}
            self._buf = {t: [] for t in TABLES}
        for table, rows in pending.items():
            cols = [c for c, _ in TABLES[table]]
            text = "".join(json.dumps({c: r.get(c) for c in cols}, separators=(",", ":")) + "\n" for r in rows)
            f = self._files[table]
            f.write(text)
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


def read_jsonl(path: Path, table: str) -> pa.Table:
    """Read a table's JSON Lines, dropping a partial last line left by a killed writer."""
    schema = arrow_schema(table)
    raw = path.read_bytes() if path.exists() else b""
    if raw and not raw.endswith(b"\n"):
        raw = raw[: raw.rfind(b"\n") + 1]
    if not raw:
        return schema.empty_table()
    return pajson.read_json(io.BytesIO(raw), parse_options=pajson.ParseOptions(explicit_schema=schema,
                                                                             unexpected_field_behavior="ignore"))


def compact_dir(directory: Path) -> None:
    """Turn each `<table>.jsonl` into `<table>.parquet` (atomically), then remove the JSON Lines."""
    for table in TABLES:
        src = directory / f"{table}.jsonl"
        if not src.exists():
            continue
        tmp = directory / f".{table}.parquet.tmp"
        pq.write_table(read_jsonl(src, table), tmp)
        tmp.rename(directory / f"{table}.parquet")
        src.unlink()
