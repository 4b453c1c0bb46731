"""The baseline: reports.analysis's checks in plain pandas (one machine, all in memory): every
anomaly's count and first examples, and the send metrics. A value (producer, seq) is one packed
int64 `v`, a topic its index."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

import numpy as np
import pandas as pd

from contracts.anomalies import KINDS
from contracts.history import CLOCK_MARGIN_MS, Retention

VALUE = ["producer", "seq"]
POS = ["topic", "partition", "offset"]
EXAMPLES = 20
BUCKET_NS, GAP_NS = 100_000_000, 1_000_000_000


def _has(df: pd.DataFrame, other: pd.DataFrame) -> np.ndarray:
    """Which rows of `df` hold a value (packed key `v`) some row of `other` holds: a hash-table
    lookup."""
    return pd.Series(df.v.to_numpy()).isin(other.v.to_numpy()).to_numpy()


def _without(df: pd.DataFrame, other: pd.DataFrame) -> pd.DataFrame:
    return df[~_has(df, other)]


def _with(df: pd.DataFrame, other: pd.DataFrame) -> pd.DataFrame:
    return df[_has(df, other)]


def _steps(live: pd.DataFrame, events: pd.DataFrame) -> pd.DataFrame:
    """Consecutive live reads per reader and partition within one assignment of it, with the
    previous offset."""
    marks = events[events.kind.isin(["assign", "revoke",
                                     "lost"])].rename(columns={"source": "reader"})
    whole = marks.partition.isna() | (marks.partition < 0)
    if "pos" not in live:
        live = live.assign(pos=np.nan)
    both = pd.concat([live.assign(one=0, every=0),
                      marks[~whole][["reader", "t", "topic", "partition"]]
                      .assign(one=1, every=0, poll=-1),
                      marks[whole][["reader", "t"]].assign(one=0, every=1, poll=-1)])
    both = both.assign(mark=both.one + both.every).sort_values(
        ["reader", "t", "mark", "poll", "pos", "offset"], ascending=[
            True, True, False, True, True, True])
    both["gen_every"] = both.groupby("reader")["every"].cumsum()
    both["gen_one"] = both.groupby(["reader", "topic", "partition"], dropna=False)["one"].cumsum()
    keys = ["reader", "gen_every", "gen_one", "topic", "partition"]
    steps = both[both.mark == 0].sort_values([*keys, "poll", "pos", "offset"])
    steps["prev"] = steps.groupby(keys)["offset"].shift()
    return steps[steps.prev.notna()]


def _ends(events: pd.DataFrame) -> pd.DataFrame:
    """The drain's end offset of each partition, whether it got there, and the log start then."""
    ends = events[events.kind == "final-end"].rename(columns={"offset": "end"})
    ends = ends.assign(reached=ends.detail == "reached")[["topic", "partition", "end", "reached"]]
    kept = events.topic[events.kind == "topic-config"]
    starts = events[(events.kind == "final-start") & events.topic.isin(kept)].rename(
        columns={"offset": "start", "t": "t_start"})
    return ends.merge(starts[["topic", "partition", "start", "t_start"]], how="left")


def _missing(ok, live, final, reads, rep, ends, events) -> tuple[pd.DataFrame, ...]:
    """The acked values the final read lacks, lost or unseen, and the acked values below the final
    log start that retention keeps (read before they went or not)."""
    missing = _without(ok, final)
    missing = missing.assign(live=_has(missing, live), in_rep=_has(missing, rep))
    covered_to = reads[reads.reader == "drain"].groupby(["topic", "partition"])["offset"].max()
    missing = missing.merge(covered_to.rename("covered_to").reset_index(), how="left").merge(
        ends, how="left")
    covered = ~missing.live & (missing.offset >= 0) & (missing.offset <= missing.covered_to)
    expired = (missing.offset >= 0) & (missing.offset < missing.start)
    dumped = bool((events.kind == "replicas-dumped").any())
    lost = (covered | (missing.reached.fillna(False).astype(bool) & ~missing.in_rep & dumped)
            ) & ~expired
    gone = ok.merge(ends, how="inner")
    gone = _when_gone(gone[(gone.offset >= 0) & (gone.offset < gone.start)], ok, events)
    return missing[lost], missing[~missing.live & ~lost & ~expired], _within_retention(gone, events)


def _anomalies(sends, reads, replicas, events) -> dict[str, pd.DataFrame]:
    ends = _ends(events)
    ours = reads[(reads.producer >= 0) & reads.checksum_ok]
    rep = replicas[replicas.producer >= 0].merge(ends[["topic", "partition", "end"]], how="left")
    rep = rep[rep.end.isna() | (rep.offset < rep.end)]
    ok = sends[sends.outcome == "ok"]
    live, final = ours[ours.phase == "live"], ours[ours.phase == "final"]
    found: dict[str, pd.DataFrame] = {}
    found["lost-write"], found["unseen"], found["retention-breach"] = _missing(
        ok, live, final, reads, rep, ends, events)
    placed = pd.concat([ok.loc[ok.offset >= 0, ["v", *POS]], ours[["v", *POS]], rep[["v", *POS]]])
    placed = placed.drop_duplicates()
    per_value = placed.groupby("v").size()
    moved = per_value[per_value > 1].reset_index()[["v"]]
    timeouts = sends[(sends.outcome == "info")
                     & (sends.error == "_MSG_TIMED_OUT")][["producer", "t_complete"]]
    awaited = _with(sends, moved).merge(timeouts.rename(columns={"t_complete": "t_out"}),
                                        on="producer")
    at_timeout = awaited[(awaited.t_invoke <= awaited.t_out)
                         & (awaited.t_complete.isna()
                            | (awaited.t_complete >= awaited.t_out))][["v"]]
    found["duplicate"], found["timeout-duplicate"] = _without(
        moved, at_timeout), at_timeout.drop_duplicates()
    # the benchmark's histories carry no batch producer epochs, so none is an epoch-duplicate
    found["epoch-duplicate"] = moved.iloc[0:0]
    found["metadata-lost"] = moved.iloc[0:0]  # nor migrations
    per_pos = placed.groupby(POS).size()
    found["inconsistent-offset"] = per_pos[per_pos > 1].reset_index()
    per_replica_pos = rep[[*POS, "v"]].drop_duplicates().groupby(POS).size()
    found["replica-divergence"] = per_replica_pos[per_replica_pos > 1].reset_index()

    acked = ok[ok.offset >= 0].sort_values(["producer", "topic", "partition", "t_invoke", "seq"])
    prev = acked.groupby([acked.producer, acked.topic, acked.partition])["offset"].shift()
    found["nonmonotonic-send"] = acked[acked.offset < prev]

    steps = _steps(reads[reads.phase == "live"], events)
    steps = steps.merge(ends[["topic", "partition", "start"]], how="left")
    found["poll-skip"] = steps[(steps.offset > steps.prev + 1) & ~(steps.offset <= steps.start)]
    found["nonmonotonic-poll"] = steps[steps.offset <= steps.prev]
    found["aborted-read"] = _with(ours, sends[sends.outcome == "fail"])
    found["unexpected"] = pd.concat([reads[(reads.producer < 0) | ~reads.checksum_ok],
                                     _without(ours, sends)])
    vanished = _without(live, final).merge(ends[ends.reached][["topic", "partition", "start"]])
    vanished = vanished[~(vanished.offset < vanished.start)]
    found["vanished-read"] = vanished[VALUE].drop_duplicates()
    committed = events[events.kind == "committed"].rename(columns={"offset": "committed"})
    # none without a group
    unread = _without(final, live).merge(committed[["topic", "partition", "committed"]])
    found["committed-unread"] = unread[unread.offset < unread.committed]
    # a metric: info sends in the log
    found["recovered"] = _with(sends[sends.outcome == "info"], placed)
    return found


def _when_gone(gone: pd.DataFrame, ok: pd.DataFrame, events: pd.DataFrame) -> pd.DataFrame:
    """`gone` with the first sampled log start past each value (else the drain's end), and the
    least offset of a value sent after that, else the drain's end, as the log's end then."""
    moves = events[events.kind == "log-start"].rename(columns={"offset": "moved_to",
                                                               "t": "t_moved"})
    pairs = gone.merge(moves[["topic", "partition", "moved_to", "t_moved"]])
    first = pairs[pairs.moved_to > pairs.offset].groupby("v").t_moved.min()
    gone = gone.assign(t_gone=gone.v.map(first).fillna(gone.t_start))
    sent = ok.loc[ok.offset >= 0, ["topic", "partition", "t_invoke", "offset"]]
    at = gone[["topic", "partition", "t_gone"]].drop_duplicates().merge(
        sent.rename(columns={"offset": "o", "t_invoke": "t_sent"}))
    later = at[at.t_sent > at.t_gone].groupby(["topic", "partition", "t_gone"]).o.min()
    gone = gone.merge(later.rename("sent_after").reset_index(), how="left")
    return gone.assign(end_then=np.fmin(gone.end, gone.sent_after.fillna(gone.end)))


def _within_retention(gone: pd.DataFrame, events: pd.DataFrame) -> pd.DataFrame:
    """The acked values below the final log start that their topic's retention kept when they
    went."""
    cfg = events[events.kind == "topic-config"]
    limits = pd.DataFrame([json.loads(d) for d in cfg.detail],
                          columns=[f.name for f in fields(Retention)])
    rows = gone.merge(limits.assign(topic=cfg.topic.to_numpy()), on="topic")
    after = (rows.end_then - rows.offset - 1) * rows.record_bytes_max
    age_ms = (rows.t_gone - rows.t_invoke) / 1e6
    return rows[((rows.bytes < 0) | (after < rows.bytes))
                & ((rows.ms < 0) | (age_ms < rows.ms - CLOCK_MARGIN_MS))]


def _metrics(sends: pd.DataFrame) -> dict:
    """Counts per outcome, ack latency percentiles, unavailability windows and the per-second
    series."""
    ok = sends[sends.outcome == "ok"]
    latency = (ok.t_complete - ok.t_invoke).to_numpy()
    t0 = int(sends.t_invoke.min()) if len(sends) else 0
    slices = np.unique((ok.t_complete.to_numpy() - t0) // BUCKET_NS)
    edges = np.concatenate([[0], slices,
                            [(sends.t_complete.max() - t0) // BUCKET_NS if len(sends) else 0]])
    gaps = (np.diff(edges) - 1) * BUCKET_NS
    since = (sends.t_complete - t0) // 1_000_000_000
    per_s = (sends.assign(s=since, latency=sends.t_complete - sends.t_invoke)
             .groupby(["s", "outcome"])["latency"]
             .agg(["size", lambda x: x.quantile(0.99, interpolation="higher")]))
    return {"counts": sends.outcome.value_counts().to_dict(),
            "latency": np.percentile(latency, [50, 95, 99], method="inverted_cdf").tolist()
            if len(ok) else None,
            "unavailability": [(int(a + 1), int(g)) for a,
                               g in zip(edges[:-1], gaps, strict=True) if g > GAP_NS],
            "per_second": per_s}


# checks that need transactions, an eos-copy stage or share consumers, which the histories this
# baseline judges never have
NOT_HERE = tuple(k.name for k in KINDS if k.transactional or k.share)


def check(history: Path) -> dict:
    """Every anomaly's count and first examples, and the send metrics, as reports.analysis finds
    them."""
    def table(name: str) -> pd.DataFrame:
        path = history / f"{name}.parquet"
        return pd.read_parquet(path) if path.exists() else pd.DataFrame()

    sends, reads, replicas, events = (table(t) for t in ("sends", "reads", "replicas", "events"))
    if len(table("txns")) or len(table("copies")) or len(table("shares")):
        raise ValueError(f"{history}: the pandas baseline judges histories without transactions "
                         "or share consumers")
    topics = pd.Index(pd.concat([t.topic for t in (sends, reads, replicas, events) if len(t)])
                      .unique())
    # numbers, not strings, in every key (as the analysis's topic hash)
    for t in (sends, reads, replicas, events):
        if len(t):
            t["topic"] = topics.get_indexer(t.topic)
    for t in (sends, reads, replicas):
        t["v"] = ((t.producer.to_numpy() << 32) + t.seq.to_numpy() if len(t)
                  else pd.Series(dtype="int64"))
    found = _anomalies(sends, reads, replicas, events)
    recovered = found.pop("recovered")
    return {"counts": {k: len(v) for k, v in found.items()} | dict.fromkeys(NOT_HERE, 0),
            "examples": {k: v.sort_values([c for c in (*VALUE, *POS) if c in v]).head(EXAMPLES)
                         .to_dict("records")
                         for k, v in found.items() if len(v)},
            "metrics": {**_metrics(sends), "recovered": len(recovered), "reads": len(reads)}}
