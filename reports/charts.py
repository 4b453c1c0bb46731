"""The report's charts (matplotlib, embedded as PNG data URIs so report.html is self-contained)."""

from __future__ import annotations

import base64
import io
import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _took_place(f) -> bool:
    """A fault row whose op ran (not the final heal, nor an op skipped or never reached)."""
    return f["fault"] != "heal" and f.get("outcome") not in ("skipped", "not-reached")


def _shade_faults(ax, faults: pd.DataFrame, t0: int) -> None:
    for _, f in faults.iterrows():
        if not _took_place(f):
            continue
        start, end = (f["t_start"] - t0) / 1e9, (f["t_end"] - t0) / 1e9
        ax.axvspan(start, end, color="tab:red", alpha=0.15, lw=0)
        ax.text(start, ax.get_ylim()[1], f"{f['fault']} {f['targets'] or ''}", fontsize=7, va="top", rotation=90)


def throughput_latency(per_second: pd.DataFrame, faults: pd.DataFrame, t0: int) -> str:
    """Acks and errors per second, and p99 latency of acks, with fault windows shaded."""
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(10, 5), sharex=True)
    for outcome, color in (("ok", "tab:green"), ("info", "tab:orange"), ("fail", "tab:red")):
        d = per_second[per_second["outcome"] == outcome] if not per_second.empty else per_second
        if not d.empty:
            ax1.plot(d["s"], d["n"], label=outcome, color=color, lw=1)
    ax1.set_ylabel("sends / s")
    ax1.legend(loc="upper right", fontsize=8)
    ok = per_second[per_second["outcome"] == "ok"] if not per_second.empty else per_second
    if not ok.empty:
        ax2.plot(ok["s"], ok["p99_ms"], color="tab:blue", lw=1)
    ax2.set_ylabel("p99 ack latency (ms)")
    ax2.set_xlabel("seconds since the first send")
    for ax in (ax1, ax2):
        _shade_faults(ax, faults, t0)
    return _png(fig)


def isr_sizes(meta: pd.DataFrame, faults: pd.DataFrame, t0: int) -> str:
    """ISR size per partition over time (from the metadata sampler), fault windows shaded."""
    fig, ax = plt.subplots(figsize=(10, 2.8))
    if not meta.empty:
        for p, g in meta.groupby("partition"):
            ax.step((g["t"] - t0) / 1e9, g["isr_size"] + 0.03 * int(p), where="post", label=f"p{p}", lw=1)
        ax.legend(loc="lower right", fontsize=8, ncol=4)
    ax.set_ylabel("ISR size")
    ax.set_xlabel("seconds since the first send")
    _shade_faults(ax, faults, t0)
    return _png(fig)


def fault_rows(faults: pd.DataFrame, t0: int) -> list[dict]:
    """Every planned fault op as a table row (seconds since the first send): how it ended, when it was planned and
    how late it started, on whom, for how long, and what it did."""
    rows = []
    for _, f in faults.iterrows():
        detail = json.loads(f["detail"] or "{}")
        ran = _took_place(f) or f["fault"] == "heal"
        rows.append({"fault": f["fault"], "outcome": f.get("outcome") or "fired", "planned_s": detail.pop(
                     "planned_at", None), "delay_s": detail.pop("delay_s", None), "targets": f["targets"],
                     "start_s": round((f["t_start"] - t0) / 1e9, 1) if ran else None,
                     "length_s": round((f["t_end"] - f["t_start"]) / 1e9, 1) if ran else None, "detail": detail})
    return rows
