"""The report's interactive timeline, beside its PNG: throughput and latency over the fault ops,
zoomed by dragging and read by hovering, drawn offline by uPlot (MIT, reports/static) inlined in
report.html."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from reports.charts import OUTCOME_WORDS

STATIC = Path(__file__).parent / "static"
# latency points inlined at most (sampled evenly): the page stays well under a megabyte
POINTS = 3_000


def library() -> dict[str, str]:
    """uPlot's script and style, to inline."""
    return {"js": (STATIC / "uPlot.iife.min.js").read_text(),
            "css": (STATIC / "uPlot.min.css").read_text()}


def data(series: dict, faults: list[dict]) -> str:
    """The timeline's data as JSON: sends per second by outcome, a sample of sends with what each
    was, and the fault ops that ran (seconds since the first send)."""
    t0, per_s, sample = series["t0"], series["per_second"], series["sample"]
    end = int(per_s["s"].max()) + 1 if not per_s.empty else 0
    seconds = list(range(end + 1))
    counts = {OUTCOME_WORDS[o]: (per_s[per_s["outcome"] == o].set_index("s")["n"]
                                 .reindex(seconds, fill_value=0)
                                 .astype(int).tolist() if not per_s.empty else [])
              for o in OUTCOME_WORDS}
    points = sample.sort_values("t_invoke").iloc[::max(
        1, -(-len(sample) // POINTS))] if not sample.empty else sample
    sends = [[round((p.t_invoke - t0) / 1e9, 3), round(float(p.latency_ms), 2),
              OUTCOME_WORDS.get(p.outcome, p.outcome), _what(p)] for p in points.itertuples()]
    ops = [{"start": f["start_s"], "end": f["start_s"] + f["length_s"],
            "what": f"{f['fault']} → {f['targets'] or 'none'} ({f['outcome']})"}
           for f in faults if f["start_s"] is not None and f["fault"] != "heal"]
    text = json.dumps({"seconds": seconds, "counts": counts, "sends": sends, "ops": ops},
                      separators=(",", ":"))
    return text.replace("</", "<\\/")  # inside a <script>, "</" could end it


def _what(p) -> str:
    """A sampled send as the hover says it."""
    placed = pd.notna(p.offset) and p.offset >= 0
    where = f"partition {p.partition}" + (f" offset {p.offset}" if placed else "")
    return f"producer {p.producer} seq {p.seq} → {where}"
