"""The report's timeline (matplotlib, embedded as a PNG data URI so report.html is self-contained):
every panel on one axis, seconds since the first send. Faults get a lane per fault line, so
overlapping ops never merge."""

from __future__ import annotations

import base64
import io
import json
import logging

import pandas as pd
from matplotlib import colormaps
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from contracts.history import fault_outcome
from contracts.results import partition_name

logging.getLogger("matplotlib").setLevel(logging.ERROR)  # font-cache notices are not the run's news

OUTCOME_COLORS = {"ok": "tab:green", "info": "tab:orange", "fail": "tab:red"}
# the history's send outcomes as the report's tables and results.json name them
OUTCOME_WORDS = {"ok": "acknowledged", "info": "indeterminate", "fail": "failed"}
ELECTION = "crimson"
RAN = ("fired", "failed", "no-effect")  # outcomes of ops that ran (a band); the others are a mark


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _s(ns, t0: int):
    return (ns - t0) / 1e9


def _lane(f) -> tuple[int, str]:
    """A fault row's lane: (its fault line, or -1 for the final heal; its fault kind)."""
    return (-1 if f["fault"] == "heal" else int(f["line"]) if pd.notna(f["line"])
            else 0), f["fault"]


def elections(meta: pd.DataFrame, t0: int) -> pd.Series:
    """Seconds of every change of a partition's leader (any partition), in order."""
    if meta.empty:
        return pd.Series(dtype=float)
    g = meta.sort_values("t")
    prev = g.groupby(["topic", "partition"])["leader"].shift()
    return _s(g.loc[g["leader"].ne(prev) & prev.notna(), "t"], t0)


def fault_lanes(ax, faults: pd.DataFrame, t0: int, elected: pd.Series) -> None:
    """One lane per fault line (and one for the final heal): the op's hold in red, its recovery (the
    broker restarts it waited for) in orange, failed or ineffective ops hatched, skipped and
    unreached ones as marks; a dotted line at each election; a tick where an upgrade's broker came
    back on the new release, and a quorum swap's voters."""
    rows = [f for _, f in faults.iterrows()]
    lanes = sorted({_lane(f) for f in rows}, key=lambda lane: (lane[0] < 0, lane[0]))
    for y, lane in enumerate(lanes):
        for f in (f for f in rows if _lane(f) == lane):
            detail = json.loads(f["detail"] or "{}")
            start, end = _s(f["t_start"], t0), _s(f["t_end"], t0)
            outcome = fault_outcome(f)
            if outcome not in RAN:
                ax.plot([_s(f["planned"], t0) if pd.notna(f["planned"]) and f["planned"] > 0
                         else start], [y],
                        marker="x", color="grey")
                continue
            hold = min(detail.get("hold_s", end - start), end - start)
            bad = outcome != "fired"
            ax.broken_barh([(start, hold)], (y - 0.35, 0.7), color="darkred" if bad else "tab:red",
                           hatch="//" if bad else None)
            ax.broken_barh([(start + hold, end - start - hold)], (y - 0.35, 0.7),
                           color="tab:orange", alpha=0.6)
            ax.text(start, y + 0.38, f"{f['fault']} → {f['targets'] or 'none'}", fontsize=6,
                    va="bottom")
            for rolled in detail.get("rolled", []):  # an upgrade: when each broker came back on it
                at = start + rolled["at_s"]
                ax.vlines(at, y - 0.35, y + 0.35, color="black", lw=1)
                # a roll back names its release; histories before it roll only to `to`
                ax.text(at, y - 0.38, f"{rolled['broker']}: {rolled.get('to', detail['to'])}",
                        fontsize=6, va="top")
            if "voters_after" in detail:  # a quorum swap: the KRaft voters before and after it
                ax.text(start, y - 0.38, "voters {} → {}".format(
                    *(",".join(map(str, detail[k])) for k in ("voters_before", "voters_after"))),
                        fontsize=6, va="top")
    ax.set_yticks(range(len(lanes)),
                  [f"{name}" if line < 0 else f"faults.{line}: {name}" for line, name in lanes],
                  fontsize=7)
    ax.set_ylim(-0.6, max(len(lanes), 1) - 0.1)
    ax.vlines(elected, -0.6, len(lanes), color=ELECTION, lw=0.9, ls=":")
    ax.legend(handles=[Patch(color="tab:red", label="fault"), Patch(color="tab:orange", alpha=0.6,
                                                                    label="recovery"),
                       Patch(facecolor="darkred", hatch="//", label="failed / no effect"),
                       Line2D([], [], color=ELECTION, ls=":", label="election")],
              loc="upper right", fontsize=7, ncol=4)


def throughput(ax, per_second: pd.DataFrame, windows: list, end: float,
               marks: list[tuple[float, float]]) -> None:
    """Sends per second by outcome, every second drawn (zero when nothing completed), the
    unavailability windows (no ack for more than a second) shaded, and `marks`: when a forbidden
    anomaly's sends were acknowledged."""
    seconds = pd.RangeIndex(0, int(end) + 1)
    for outcome, color in OUTCOME_COLORS.items():
        rows = per_second[per_second["outcome"] == outcome] if not per_second.empty else per_second
        counts = rows.set_index("s")["n"].reindex(seconds, fill_value=0) if not rows.empty else None
        if counts is not None:
            ax.step(seconds, counts, where="post", color=color, lw=1, label=OUTCOME_WORDS[outcome])
    for w in windows:
        ax.axvspan(w.start_s, w.start_s + w.length_s, color="grey", alpha=0.25, lw=0)
    for first, last in marks:
        ax.axvspan(first, max(last, first + 0.2), color="black", alpha=0.6, lw=0)
    ax.set_ylabel("sends / s")
    mark = [Patch(color="black", alpha=0.6, label="forbidden anomaly's sends "
                                                  "acknowledged")] if marks else []
    ax.legend(handles=[*ax.get_legend_handles_labels()[0],
                       Patch(color="grey", alpha=0.25, label="unavailable"),
                       *mark], loc="upper right", fontsize=7, ncol=5)


def latency(ax, sample: pd.DataFrame, t0: int, sends: int) -> None:
    """Each (sampled) send at its invoke time and latency, coloured by outcome, like Jepsen's
    latency-raw plot; the axis says how many of the run's `sends` the sample holds."""
    for outcome, color in OUTCOME_COLORS.items():
        d = sample[sample["outcome"] == outcome] if not sample.empty else sample
        if not d.empty:
            ax.scatter(_s(d["t_invoke"], t0), d["latency_ms"].clip(lower=0.1), s=2, color=color,
                       alpha=0.5, label=OUTCOME_WORDS[outcome], rasterized=True)
    ax.set_yscale("log")
    ax.set_ylabel(f"latency (ms)\n{len(sample):,} of {sends:,} sends" if len(sample) < sends
                  else "latency (ms)")
    if not sample.empty:
        ax.legend(loc="upper right", fontsize=7, ncol=3, markerscale=4)


def leaders(ax, meta: pd.DataFrame, t0: int, end: float) -> None:
    """Per partition of each topic: its leader over time (a colour per broker, grey when
    leaderless), the ISR size as a step line within the lane, and a line across the lane at each
    election (a change of leader); above them, the active controller."""
    cmap = colormaps["tab10"]
    lanes = [(tp, g.sort_values("t")) for tp,
             g in meta.groupby(["topic", "partition"])] if not meta.empty else []
    for y, (_, g) in enumerate(lanes):
        times = [*_s(g["t"], t0).tolist(), end]
        for (t, leader), t_next in zip(zip(times, g["leader"].tolist(), strict=False), times[1:],
                                       strict=False):
            ax.broken_barh([(t, t_next - t)], (y - 0.4, 0.35),
                           color="lightgrey" if leader < 0 else cmap(leader % 10))
        ax.vlines(elections(g, t0), y - 0.45, y + 0.45, color=ELECTION, lw=1.5)
        top = max(int(g["isr_size"].max()), 1)
        ax.step(_s(g["t"], t0), y + g["isr_size"] / top * 0.4, where="post", color="black", lw=0.8)
        # the scale: the line's top is this size
        ax.text(end, y + 0.4, f" ISR {top}", fontsize=6, va="center")
        ax.text(end, y, " ISR 0", fontsize=6, va="center")
    controller_lane(ax, meta, t0, end, len(lanes))
    ax.set_yticks(range(len(lanes) + 1), [*(partition_name(t, p) for (t, p), _ in lanes),
                                          "active controller"], fontsize=7)
    brokers = sorted({int(b) for b in (*meta["leader"].unique(), *meta["controller"].dropna())
                      if b >= 0}) if not meta.empty else []
    ax.legend(handles=[Patch(color=cmap(b % 10), label=f"broker {b}") for b in brokers]
              + [Patch(color="lightgrey", label="no leader"),
                 Line2D([], [], color=ELECTION, label="election")],
              loc="upper right", fontsize=7, ncol=7)
    ax.set_ylabel("leader / ISR")


def controller_lane(ax, meta: pd.DataFrame, t0: int, end: float, y: int) -> None:
    """Above the partitions: which node was the active controller over time (grey: none known)."""
    if meta.empty:
        return
    ctl = meta.sort_values("t").drop_duplicates("t")[["t", "controller"]].fillna(-1)
    ctl = ctl[ctl["controller"].ne(ctl["controller"].shift())]
    times = [*_s(ctl["t"], t0).tolist(), end]
    for t, c, t_next in zip(times, ctl["controller"].astype(int), times[1:], strict=False):
        ax.broken_barh([(t, t_next - t)], (y - 0.3, 0.6),
                       color="lightgrey" if c < 0 else colormaps["tab10"](c % 10))


def share_lanes(ax, handed: pd.DataFrame, failed: pd.DataFrame, end: float) -> None:
    """Per share group member: records handed to it each second (a step line within its lane),
    deliveries after the first (orange dots, by how many) and failed acknowledgements (red x)."""
    readers = sorted(handed["reader"].unique()) if not handed.empty else []
    seconds = pd.RangeIndex(0, int(end) + 1)
    top = max(int(handed["n"].max()), 1) if not handed.empty else 1
    for y, reader in enumerate(readers):
        mine = handed[handed["reader"] == reader].set_index("s")
        n = mine["n"].reindex(seconds, fill_value=0)
        ax.step(seconds, y - 0.4 + n / top * 0.8, where="post", color="grey", lw=0.8)
        again = mine[mine["again"] > 0]
        ax.scatter(again.index, [y] * len(again), s=4 + 40 * again["again"] / top,
                   color="tab:orange", zorder=3)
        lost = failed[failed["reader"] == reader] if not failed.empty else failed
        ax.scatter(lost["s"], [y] * len(lost), marker="x", color="tab:red", zorder=4)
    ax.set_yticks(range(len(readers)), readers, fontsize=7)
    ax.set_ylabel(f"share members\n(lane top: {top:,}/s)")
    ax.legend(handles=[Line2D([], [], color="grey", label="records handed"),
                       Line2D([], [], color="tab:orange", marker="o", ls="", label="handed again"),
                       Line2D([], [], color="tab:red", marker="x", ls="",
                              label="acknowledgement failed")],
              loc="upper right", fontsize=7, ncol=3)


def timeline(series: dict, windows: list, marks: list[tuple[float, float]], sends: int) -> str:
    """The whole run on one time axis: faults, throughput (with `marks`, when forbidden anomalies'
    sends were acknowledged), latency (a sample of `sends`), leaders and ISR, and a share group's
    members."""
    t0, faults, meta = series["t0"], series["faults"], series["metadata"]
    ends = [series["per_second"]["s"].max() + 1 if not series["per_second"].empty else 0,
            _s(faults["t_end"].max(), t0) if not faults.empty else 0,
            _s(meta["t"].max(), t0) if not meta.empty else 0]
    end = float(max(ends))
    lanes = len({_lane(f) for _, f in faults.iterrows()}) or 1
    parts = len(meta.groupby(["topic", "partition"])) if not meta.empty else 1
    members = series["share"]["reader"].nunique() if "share" in series else 0
    heights = [0.4 + 0.3 * lanes, 2.2, 2.2, 0.5 + 0.35 * (parts + 1),
               *([0.5 + 0.35 * members] if members else [])]
    # not pyplot's: no global state to share
    fig = Figure(figsize=(11, 1.3 + sum(heights)))
    axes = fig.subplots(len(heights), 1, sharex=True, gridspec_kw={"height_ratios": heights})
    fault_lanes(axes[0], faults, t0, elections(meta, t0))
    throughput(axes[1], series["per_second"], windows, end, marks)
    latency(axes[2], series["sample"], t0, sends)
    leaders(axes[3], meta, t0, end)
    if members:
        share_lanes(axes[4], series["share"], series["share_failed"], end)
    axes[-1].set_xlim(0, end)
    axes[-1].set_xlabel("seconds since the first send")
    axes[1].yaxis.set_major_locator(MaxNLocator(integer=True))
    fig.subplots_adjust(left=0.12, right=0.95, top=0.98, bottom=0.06, hspace=0.12)
    return _png(fig)


def fault_rows(faults: pd.DataFrame, t0: int) -> list[dict]:
    """Every planned fault op as a table row (seconds since the first send): how it ended, when it
    was planned and how late it started, on whom, for how long, and what it did."""
    rows = []
    for _, f in faults.iterrows():
        detail = json.loads(f["detail"] or "{}")
        outcome = fault_outcome(f)
        ran = outcome in RAN or f["fault"] == "heal"
        rows.append({"fault": f["fault"], "outcome": outcome,
                     "planned_s": detail.pop("planned_at", None),
                     "delay_s": detail.pop("delay_s", None), "targets": f["targets"],
                     "start_s": round(_s(f["t_start"], t0), 1) if ran else None,
                     "length_s": round((f["t_end"] - f["t_start"]) / 1e9, 1) if ran else None,
                     "detail": {k: v for k, v in detail.items() if k != "trace"}})
    return rows
