"""Synthetic histories of N sends with known injected anomalies, written as Parquet with
numpy/pyarrow."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from contracts.history import NO_TXN, arrow_schema

PRODUCERS, PARTITIONS = 8, 12
LOST, DUPLICATED = 1000, 500  # injected, so both engines must report exactly these


def _table(name: str, columns: dict) -> pa.Table:
    """A table of the history's schema; the columns a synthetic history has no use for are null."""
    schema = arrow_schema(name)
    m = len(next(iter(columns.values())))
    return pa.table({f.name: columns.get(f.name, pa.nulls(m, f.type)) for f in schema},
                    schema=schema)


def generate(n: int, directory: Path, chunk: int = 5_000_000) -> dict[str, int]:
    """sends, final reads and one replica per record; LOST acked records absent everywhere,
    DUPLICATED records written twice. Returns the expected counts."""
    directory.mkdir(parents=True, exist_ok=True)
    writers = {t: pq.ParquetWriter(directory / f"{t}.parquet", arrow_schema(t))
               for t in ("sends", "reads", "replicas", "events")}
    rng = np.random.default_rng(7)
    lost = set(rng.choice(n, LOST, replace=False).tolist())
    dup = rng.choice(np.setdiff1d(np.arange(n), np.fromiter(lost, int)), DUPLICATED, replace=False)
    next_offset = np.zeros(PARTITIONS, dtype=np.int64)
    for start in range(0, n, chunk):
        idx = np.arange(start, min(n, start + chunk), dtype=np.int64)
        producer, seq, part = idx % PRODUCERS, idx // PRODUCERS, idx % PARTITIONS
        offset = np.empty_like(idx)
        for p in range(PARTITIONS):  # offsets per partition in send order
            sel = part == p
            k = int(sel.sum())
            offset[sel] = next_offset[p] + np.arange(k)
            next_offset[p] += k
        t = 1_000_000_000 + idx * 20_000
        m = len(idx)
        writers["sends"].write_table(_table("sends", {
            "producer": producer, "seq": seq, "topic": pa.array(["chaos"] * m), "partition": part,
            "t_invoke": t, "t_complete": t + 3_000_000, "outcome": pa.array(["ok"] * m),
            "offset": offset, "txn": np.full(m, NO_TXN)}))
        keep = ~np.isin(idx, np.fromiter(lost, int))
        r_idx = np.concatenate([idx[keep], idx[np.isin(idx, dup)]])
        # far, distinct offsets
        r_off = np.concatenate([offset[keep], offset[np.isin(idx, dup)] + 10**12])
        r = len(r_idx)
        cols = {"topic": pa.array(["chaos"] * r), "partition": r_idx % PARTITIONS, "offset": r_off,
                "producer": r_idx % PRODUCERS, "seq": r_idx // PRODUCERS,
                "checksum_ok": np.ones(r, dtype=bool)}
        writers["reads"].write_table(_table("reads", {
            "reader": pa.array(["drain"] * r), "phase": pa.array(["final"] * r),
            "poll": r_idx // 500, "t": 2_000_000_000_000 + r_idx, **cols}))
        writers["replicas"].write_table(_table("replicas", {
            "broker": np.ones(r, dtype=np.int64), "leader_epoch": np.zeros(r, dtype=np.int64),
            **cols}))
    writers["events"].write_table(_table("events", {
        "t": np.full(PARTITIONS, 3_000_000_000_000), "source": ["drain"] * PARTITIONS,
        "kind": ["final-end"] * PARTITIONS, "topic": ["chaos"] * PARTITIONS,
        "partition": np.arange(PARTITIONS), "offset": np.full(PARTITIONS, 10**13),
        "detail": ["reached"] * PARTITIONS}))
    writers["events"].write_table(_table("events", {
        "t": [3_000_000_000_001], "source": ["runner"], "kind": ["replicas-dumped"],
        "topic": ["chaos"], "partition": [-1], "offset": [-1], "detail": [""]}))
    for w in writers.values():
        w.close()
    return {"lost-write": LOST, "duplicate": DUPLICATED}
