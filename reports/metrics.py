"""A run's metrics from one pass over its sends: a latency histogram per second and outcome, and
what derives from it (counts, latency percentiles, unavailability windows, the per-second series the
charts draw)."""

from __future__ import annotations

import json
import math
import statistics
from typing import TYPE_CHECKING

from pyspark.sql import Column, DataFrame, Row, Window
from pyspark.sql import functions as F

from contracts.history import Event

if TYPE_CHECKING:
    import pandas as pd

GAP_NS = 1_000_000_000  # no successful ack for longer than this is an unavailability window
BUCKET_NS = 100_000_000  # the resolution of those windows
# significant digits a latency keeps in the histogram (as HdrHistogram's usual precision)
LATENCY_DIGITS = 3
PERCENTILES = {"p50": 0.5, "p95": 0.95, "p99": 0.99}
SLOPE_FROM_H = 1 / 6  # runs shorter than this get no memory slope
# the memory slope starts a minute in, once the clients have started and warmed up
STEADY_FROM_NS = 60 * 10**9


def latency_bin(ns: Column) -> Column:
    """`ns` rounded down to LATENCY_DIGITS significant digits: the histogram bucket, under 1% below
    the value."""
    scale = F.pow(F.lit(10.0), F.greatest(F.lit(0), F.floor(F.log10(ns)) - (LATENCY_DIGITS - 1)))
    return (F.floor(ns / scale) * scale).cast("long")


def histogram(sends: DataFrame, t0: int) -> DataFrame:
    """One row per (second since t0, outcome, latency bin): sends, which of the second's ten
    BUCKET_NS slices they completed in (a bit each), the last completion and the largest latency.
    Fixed-width: one hash aggregate."""
    since = F.col("t_complete") - t0
    latency = F.col("t_complete") - F.col("t_invoke")
    return (sends.groupBy((since / 1e9).cast("long").alias("s"), "outcome",
                          latency_bin(latency).alias("bin"))
            .agg(F.count("*").alias("n"),
                 F.bit_or(F.pow(F.lit(2), F.floor(since / BUCKET_NS) % 10).cast("int"))
                 .alias("slices"),
                 F.max("t_complete").alias("t1"), F.max(latency).alias("max")))


def nearest_rank(bins: list[tuple[int, int]], q: float) -> int | None:
    """The bin holding the ceil(q * n)-th smallest of n latencies, from sorted (bin, count)
    pairs."""
    need, seen = math.ceil(q * sum(n for _, n in bins)), 0
    for b, n in bins:
        seen += n
        if seen >= max(need, 1):
            return b
    return None


def per_second(hist: DataFrame) -> DataFrame:
    """Sends and p99 latency (ms, nearest rank) per second and outcome, from the histogram."""
    group = Window.partitionBy("s", "outcome")
    below = F.sum("n").over(group.orderBy("bin").rowsBetween(Window.unboundedPreceding, 0))
    ranked = hist.select("s", "outcome", "bin", below.alias("below"),
                         F.sum("n").over(group).alias("total"))
    p99 = F.min(F.when(F.col("below") >= F.greatest(F.ceil(F.col("total") * 0.99), F.lit(1)),
                       F.col("bin")))
    return ranked.groupBy("s", "outcome").agg(F.max("total").alias("n"),
                                              (p99 / 1e6).alias("p99_ms")).orderBy("s")


def gaps(slices: list[int], end: int) -> list[dict]:
    """Windows with no successful ack for more than GAP_NS, from the BUCKET_NS slices (since t0)
    that had one; `end` is the last slice of the run."""
    edges = [0, *slices, end]
    out = []
    for a, b in zip(edges, edges[1:], strict=False):
        length = (b - a - 1) * BUCKET_NS
        if length > GAP_NS:
            out.append({"start_s": round((a + 1) * BUCKET_NS / 1e9, 1),
                        "length_s": round(length / 1e9, 1)})
    return out


def send_metrics(sends: DataFrame) -> tuple[dict, DataFrame, int]:
    """Counts per outcome, ack latency percentiles and max, unavailability windows; the per-second
    series and t0, the first send's invoke time (0 without sends)."""
    t0 = sends.agg(F.min("t_invoke")).first()[0] or 0
    hist = histogram(sends, t0).localCheckpoint()
    totals = {r["outcome"]: r for r in hist.groupBy("outcome").agg(
        F.sum("n").alias("n"), F.max("t1").alias("t1"), F.max("max").alias("max")).collect()}
    ok = hist.filter(F.col("outcome") == "ok")
    bins = sorted((r["bin"], r["n"]) for r in ok.groupBy("bin").agg(F.sum("n").alias("n")).collect()
                  if r["bin"] is not None)  # a row without a completion time has no latency
    slices = sorted(r["s"] * 10 + i for r in ok.groupBy("s").agg(F.bit_or("slices").alias("slices"))
                    .collect()
                    if r["s"] is not None for i in range(10) if r["slices"] >> i & 1)
    t1 = max((r["t1"] for r in totals.values() if r["t1"] is not None), default=None)
    windows = gaps(slices, (t1 - t0) // BUCKET_NS) if t1 is not None else []
    latency = {k: _ms(nearest_rank(bins, q)) for k, q in PERCENTILES.items()}
    latency["max"] = _ms(totals["ok"]["max"]) if "ok" in totals else None
    counts = {name: totals[o]["n"] if o in totals else 0
              for name, o in (("acked", "ok"), ("failed", "fail"), ("indeterminate", "info"))}
    return ({**counts, "latency_ms": latency, "unavailability": windows,
             "unavailable_s": round(sum(w["length_s"] for w in windows), 2)}, per_second(hist), t0)


def client_requests(events: DataFrame) -> dict[str, int] | None:
    """Requests librdkafka timed out, retried and failed to transmit, over every producer handle of
    the run (each handle's last `requests` event); None when no producer reported any."""
    names = ("timed_out", "retried", "errors")
    detail = [F.get_json_object("detail", f"$.{n}").cast("long").alias(n) for n in names]
    last = (events.filter(F.col("kind") == Event.REQUESTS.value)
            .select("source", F.get_json_object("detail", "$.handle").alias("handle"), *detail)
            .groupBy("source", "handle").agg(*[F.max(n).alias(n) for n in names]))
    total = last.agg(F.count("*").alias("handles"), *[F.sum(n).alias(n) for n in names]).first()
    return {n: int(total[n]) for n in names} if total["handles"] else None


def remote_tier(events: DataFrame) -> dict[str, int] | None:
    """Segments the remote tier gained and lost, and log start moves; None when the run sampled no
    remote tier."""
    kinds = {Event.REMOTE_UPLOADED.value: "uploaded", Event.REMOTE_DELETED.value: "deleted",
             Event.LOG_START.value: "log_start_moves"}
    rows = events.filter(F.col("kind").isin(*kinds)).groupBy("kind").count().collect()
    return {kinds[r["kind"]]: r["count"] for r in rows} or None


def memory(events: DataFrame) -> dict | None:
    """The harness's and its clients' resident memory over the run: samples, first and peak (MiB),
    the least squares slope of their sum in MiB per hour, and each process's growth (MiB), over the
    workload's steady samples: from its second minute (start-up is not growth) to its end (samples
    marked `end` are taken after the workload, when clients are gone and the harness drains). No
    slope or growth under three such samples or SLOPE_FROM_H of them; None when the run took no
    sample."""
    names = ("harness", "clients")
    rows = (events.filter(F.col("kind") == Event.MEMORY.value)
            .select("t",
                    *[F.get_json_object("detail", f"$.{n}").cast("long").alias(n) for n in names],
                    F.get_json_object("detail", "$.each").alias("each"),
                    F.coalesce(F.get_json_object("detail", "$.end").cast("boolean"), F.lit(False))
                    .alias("end"))
            .orderBy("t").collect())
    if not rows:
        return None
    total = [(r["harness"] + r["clients"]) / 2**20 for r in rows]
    steady = [(r, (r["t"] - rows[0]["t"]) / 3.6e12, mib) for r, mib in zip(rows, total, strict=True)
              if not r["end"] and r["t"] - rows[0]["t"] >= STEADY_FROM_NS]
    long_enough = len(steady) >= 3 and steady[-1][1] - steady[0][1] >= SLOPE_FROM_H
    slope = (statistics.linear_regression([h for _, h, _ in steady], [m for _, _, m in steady])
             .slope
             if long_enough else None)
    return {"samples": len(rows), "first_mib": round(total[0], 1), "peak_mib": round(max(total), 1),
            "harness_peak_mib": round(max(r["harness"] for r in rows) / 2**20, 1),
            "slope_mib_per_h": None if slope is None else round(float(slope), 1),
            "growth_mib": _growth(steady[0][0], steady[-1][0]) if long_enough else {}}


def _growth(first: Row, last: Row) -> dict[str, float]:
    """MiB each process (the harness, each client by name) gained from the first steady sample to
    the last; a client in only one of them is left out (it started or ended between them)."""
    def each(r: Row) -> dict[str, int]:
        return {"harness": r["harness"], **(json.loads(r["each"]) if r["each"] else {})}
    before, after = each(first), each(last)
    return {name: round((after[name] - before[name]) / 2**20, 1)
            for name in sorted(before.keys() & after.keys())}


def _ms(ns: int | None) -> float | None:
    return None if ns is None else round(ns / 1e6, 2)


def isr_recovery_s(meta: pd.DataFrame, faults: pd.DataFrame) -> float | None:
    """The longest time from a fault op's end until the ISR of every partition of every topic was
    full again (its largest size in the run), from the sampler's samples; None without ops or
    samples, or if it never refilled."""
    ops = faults[(faults["fault"] != "heal") & faults["t_end"]
                 .notna()] if not faults.empty else faults
    if meta.empty or ops.empty:
        return None
    full = meta["isr_size"] >= meta.groupby(["topic", "partition"])["isr_size"].transform("max")
    wide = meta.assign(full=full.astype(int)).pivot_table(
        index="t", columns=["topic", "partition"], values="full", aggfunc="last")
    all_full = wide.ffill().fillna(0).astype(bool).all(axis=1)
    times = all_full.index[all_full.to_numpy()]
    waits = [(times[times >= end][0] - end) / 1e9 for end in ops["t_end"] if (times >= end).any()]
    return round(max(waits), 2) if waits else None
