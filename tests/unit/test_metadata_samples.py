"""Metadata samples of every topic: the sampler writes them, the timeline gives each partition of
each topic a lane."""

from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure

from reports.charts import elections, leaders

S = 1_000_000_000


def test_each_partition_of_each_topic_has_its_lane_and_its_own_elections():
    # partition 0 of two topics led by different brokers: only chaos-2's change of leader at 2 s is
    # an election
    # the active controller: 1, none known at 1 s, then 2
    meta = pd.DataFrame([(0, "chaos", 0, 1, "1,2,3", 1), (0, "chaos-2", 0, 2, "1,2,3", 1),
                         (1 * S, "chaos", 0, 1, "1,2,3", -1), (1 * S, "chaos-2", 0, 2, "1,2,3", -1),
                         (2 * S, "chaos-2", 0, 3, "2,3", 2)],
                        columns=["t", "topic", "partition", "leader", "isr", "controller"])
    meta["isr_size"] = meta["isr"].str.count(",") + 1
    assert elections(meta, 0).tolist() == [2.0]
    ax = Figure().subplots()  # as the report draws: no pyplot, so no display backend to choose
    leaders(ax, meta, 0, 3.0)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["chaos-0", "chaos-2-0",
                                                            "active controller"]
    lane = [c for c in ax.collections if c.get_paths() and
            all(1.6 < p.vertices[:, 1].mean() < 2.4 for p in c.get_paths())]
    spans = sorted((p.vertices[:, 0].min(), p.vertices[:, 0].max()) for c in lane
                   for p in c.get_paths())
    assert spans == [(0.0, 1.0), (1.0, 2.0), (2.0, 3.0)]


def test_the_sampler_samples_every_topic_and_records_a_topic_it_could_not(tmp_path):
    import json
    from types import SimpleNamespace

    from contracts.history import HistoryWriter
    from workloads.sampler import MetadataSampler

    def partitions(topics: tuple[str, ...]) -> dict:
        return {t: {p: SimpleNamespace(id=p, leader=p + 1, isrs=[3, 1, 2]) for p in range(2)}
                for t in topics if t != "gone"}

    def unanswered(topics: tuple[str, ...]) -> dict:
        raise RuntimeError("No broker answered metadata")

    history = HistoryWriter(tmp_path)
    MetadataSampler(("chaos", "gone", "chaos-2"), partitions, lambda: 3, history).sample()
    MetadataSampler(("chaos", "chaos-2"), unanswered, lambda: 3, history).sample()
    history.close(compact=False)
    rows = [json.loads(line) for line in (tmp_path / "metadata.jsonl").read_text().splitlines()]
    assert [(r["topic"], r["partition"], r["leader"], r["isr"]) for r in rows] == [
        ("chaos", 0, 1, "1,2,3"), ("chaos", 1, 2, "1,2,3"), ("chaos-2", 0, 1, "1,2,3"),
        ("chaos-2", 1, 2, "1,2,3")]
    events = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert [(e["kind"], e["topic"], e["detail"]) for e in events] == [
        ("sample-error", "gone", "absent from the answer"),
        ("sample-error", "", "RuntimeError: No broker answered metadata")]
