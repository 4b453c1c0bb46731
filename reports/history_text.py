"""A run's history as text, like Jepsen's history.txt: rows of the chosen tables in time order,
fault ops among them, each time in seconds since the first send, each table's columns aligned."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from contracts.history import read_jsonl

WHEN = {"sends": "t_invoke", "txns": "t_begin", "copies": "t", "copy_txns": "t_begin", "reads": "t",
        "faults": "t_start", "metadata": "t", "events": "t"}  # each timed table's clock column
TIMED = tuple(WHEN)
# ns on the run's clock
CLOCKS = {"t", "t_invoke", "t_complete", "t_begin", "t_commit", "t_end", "t_start", "planned"}


def table(history: Path, name: str) -> pa.Table:
    """One table of a history: its Parquet file and any JSON Lines a killed run left beside it."""
    parts = [pq.read_table(history / f"{name}.parquet")] if (
        history / f"{name}.parquet").exists() else []
    parts.append(read_jsonl(history, name))
    return pa.concat_tables(parts, promote_options="default")


def lines(history: Path, tables: list[str], around: float | None = None,
          window: float = 1.0) -> Iterator[str]:
    """The rows of `tables` and every fault op, in time order; with `around`, only those within
    `window` seconds of it. Times are seconds since the first send (the report's axis)."""
    sends = table(history, "sends").column("t_invoke").to_pylist()
    t0 = min((t for t in sends if t is not None), default=0)
    rows = []
    for name in dict.fromkeys([*tables, "faults"]):
        for row in table(history, name).to_pylist():
            at = (row.pop(WHEN[name]) - t0) / 1e9 if row.get(WHEN[name]) is not None else None
            if at is not None and (around is None or abs(at - around) <= window):
                rows.append((at, name, {k: _cell(k, v, t0) for k, v in row.items()}))
    rows.sort(key=lambda r: r[0])
    widths: dict[tuple[str, str], int] = {}
    for _, name, cells in rows:
        for k, cell in cells.items():
            widths[name, k] = max(widths.get((name, k), 0), len(cell))
    for at, name, cells in rows:  # a column no row of the table has takes no room
        text = " ".join(cell.ljust(widths[name, k]) for k, cell in cells.items() if widths[name, k])
        yield f"{at:10.3f}  {name:<9} {text}".rstrip()


def _cell(column: str, value: object, t0: int) -> str:
    """`column=value`, a clock value as seconds since the first send (a negative one, no such
    moment, as it is); "" for no value."""
    if value is None or value == "":
        return ""
    if column in CLOCKS and isinstance(value, int) and value >= 0:
        value = f"{(value - t0) / 1e9:.3f}"
    return f"{column}={value}"
