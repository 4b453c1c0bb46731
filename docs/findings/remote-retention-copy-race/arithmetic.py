"""The copy race's arithmetic for one run: each remote deletion Kafka logged for a retention.bytes
breach, the segment whose copy was in flight then, and the size Kafka counted against what the
partition held. Usage: python docs/findings/remote-retention-copy-race/arithmetic.py RUN_DIR"""

from __future__ import annotations

import json
import re
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pandas as pd

LINE = re.compile(r"^\[(?P<at>[\d-]+ [\d:,]+)\] INFO \[RemoteLogManager=(?P<broker>\d+) "
                  r"partition=\S+:(?P<topic>.+)-(?P<p>\d+)\] (?P<what>.*)$")
DELETE = re.compile(r"About to delete remote log segment .*id=(?P<id>[\w-]+)\} due to retention "
                    r"size (?P<limit>\d+) breach\. Log size after deletion will be (?P<after>\d+)")
COPIED = re.compile(r"Copied (?P<base>\d+)\.log to remote storage with segment-id: "
                    r".*id=(?P<id>[\w-]+)\}")
WINDOW = timedelta(seconds=5)  # a copy that ends this long after the deletion was not in flight
HEADER = ("| deletion logged (UTC) | run s (±1) | partition | deleted segment (bytes) | copy in "
          "flight (bytes), its end | Kafka's size after | the partition's size after | below "
          "retention.bytes by |\n|---|---|---|---|---|---|---|---|")


def logged(run: Path) -> list[dict]:
    """The remote log manager's deletions and copies, from every broker's log, in time order."""
    rows = []
    for log in sorted((run / "logs").glob("kafka-*.log")):
        for line in log.read_text(errors="replace").splitlines():
            if not (m := LINE.match(line)):
                continue
            at = datetime.strptime(m["at"], "%Y-%m-%d %H:%M:%S,%f")
            where = {"at": at, "broker": int(m["broker"]), "p": int(m["p"])}
            if d := DELETE.search(m["what"]):
                rows.append(where | {"kind": "delete", "id": d["id"], "limit": int(d["limit"]),
                                     "after": int(d["after"])})
            elif c := COPIED.search(m["what"]):
                rows.append(where | {"kind": "copied", "id": c["id"], "base": int(c["base"])})
    return sorted(rows, key=lambda r: r["at"])


def uploaded(run: Path) -> dict[str, tuple[int, int]]:
    """Each uploaded segment's base offset and bytes, by segment id (the sampler's events)."""
    events = pd.read_parquet(run / "history" / "events.parquet")
    up = events[events.kind == "remote-uploaded"]
    return {json.loads(d)["segment"]: (int(o), int(json.loads(d)["bytes"]))
            for o, d in zip(up.offset, up.detail, strict=True)}


def row(d: dict, copy: dict | None, size: dict[str, tuple[int, int]], second: float) -> str:
    """One deletion's markdown row."""
    base, gone = size.get(d["id"], (-1, 0))
    copying = "none"
    held = None
    if copy is not None and copy["id"] in size:
        copying = f"{copy['base']} ({size[copy['id']][1]:,}), copied {copy['at']:%H:%M:%S,%f}"[:-3]
        held = d["after"] - size[copy["id"]][1]
    tail = f"{held:,} | {d['limit'] - held:,} |" if held is not None else "- | - |"
    return (f"| {d['at']:%H:%M:%S,%f}"[:-3] + f" | {second:.1f} | {d['p']} | {base} ({gone:,}) | "
            f"{copying} | {d['after']:,} | {tail}")


def table(run: Path) -> str:
    """The run's deletions, one row each, run seconds counted from its first send."""
    info = json.loads((run / "run.json").read_text())
    first = pd.read_parquet(run / "history" / "sends.parquet").t_invoke.min()
    start = datetime.fromisoformat(info["started_utc"]).replace(tzinfo=None)
    lead_s = (first - info["t0_ns"]) / 1e9  # from the run's start to its first send
    size, log = uploaded(run), logged(run)
    rows = []
    for i, d in ((i, r) for i, r in enumerate(log) if r["kind"] == "delete"):
        # in flight: its end logged after the deletion (the sort keeps a broker's lines in order)
        copy = next((c for c in log[i + 1:] if c["kind"] == "copied" and (c["p"], c["broker"]) ==
                     (d["p"], d["broker"]) and c["at"] <= d["at"] + WINDOW), None)
        rows.append(row(d, copy, size, (d["at"] - start).total_seconds() - lead_s))
    return "\n".join([HEADER, *rows])


if __name__ == "__main__":
    print(table(Path(sys.argv[1])))
