"""The baseline: the same core checks as reports.analysis, in plain pandas (one machine, all in memory)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

VALUE = ["producer", "seq"]
POS = ["topic", "partition", "offset"]


def check(history: Path) -> dict[str, int]:
    """lost-write, duplicate, inconsistent-offset, nonmonotonic-send, aborted-read and vanished-read counts."""
    sends = pd.read_parquet(history / "sends.parquet")
    reads = pd.read_parquet(history / "reads.parquet", columns=["reader", "phase", *POS, *VALUE, "checksum_ok"])
    replicas = pd.read_parquet(history / "replicas.parquet", columns=[*POS, *VALUE])
    ok = sends[sends.outcome == "ok"]
    in_rep = replicas[VALUE].drop_duplicates()
    live = reads.loc[reads.phase == "live", VALUE].drop_duplicates()
    final = reads.loc[reads.phase == "final", VALUE].drop_duplicates()
    missing = ok.merge(final, on=VALUE, how="left", indicator=True)
    missing = missing[missing["_merge"] == "left_only"].drop(columns="_merge")
    missing = missing.merge(live.assign(live=True), on=VALUE, how="left")
    covered = reads[reads.reader == "drain"].groupby(["topic", "partition"])["offset"].max().rename("covered")
    missing = missing.merge(covered, on=["topic", "partition"], how="left")
    not_rep = missing.merge(in_rep, on=VALUE, how="left", indicator=True)["_merge"].eq("left_only").to_numpy()
    never_read = missing.live.isna().to_numpy()
    lost = int((never_read & (missing.offset <= missing.covered).to_numpy() | not_rep).sum())
    positions = pd.concat([ok.loc[ok.offset >= 0, [*VALUE, *POS]], reads[[*VALUE, *POS]], replicas[[*VALUE, *POS]]])
    positions = positions.drop_duplicates()
    dup = int((positions.groupby(VALUE).size() > 1).sum())
    inconsistent = int((positions.drop_duplicates([*POS, *VALUE]).groupby(POS).size() > 1).sum())
    acked = ok[ok.offset >= 0].sort_values(["producer", "partition", "seq"])
    prev_max = acked.groupby(["producer", "partition"])["offset"].cummax().groupby(
        [acked.producer, acked.partition]).shift()
    reorder = int((acked.offset < prev_max).sum())
    failed = sends.loc[sends.outcome == "fail", VALUE]
    aborted = len(reads.merge(failed, on=VALUE))
    vanished = int(live.merge(final, on=VALUE, how="left", indicator=True)["_merge"].eq("left_only").sum())
    return {"lost-write": lost, "duplicate": dup, "inconsistent-offset": inconsistent, "nonmonotonic-send": reorder,
            "aborted-read": aborted, "vanished-read": vanished}
