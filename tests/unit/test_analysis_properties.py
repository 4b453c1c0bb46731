"""Hypothesis: row order never changes results; a clean unrelated producer changes no anomaly
count."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reports.analysis import analyze
from tests.histories import clean

SETTINGS = settings(max_examples=2, deadline=None, suppress_health_check=list(HealthCheck))


def anomalous():
    """A history with a lost write, a duplicate and a vanished read."""
    h = clean().drop("reads", producer=0, seq=0).drop("replicas", producer=0, seq=0)
    h.read("drain", 1, 6, 0, 1)
    return h.drop("reads", reader="drain", producer=1, seq=2).drop("replicas", producer=1, seq=2)


@pytest.mark.slow  # make test-all
@SETTINGS
@given(seed=st.integers(0, 2**32 - 1))
def test_row_order_does_not_change_results(spark, tmp_path_factory, seed):
    base = analyze(spark, anomalous().write(tmp_path_factory.mktemp("a") / "history"))
    h = anomalous()
    for rows in h.rows.values():
        random.Random(seed).shuffle(rows)
    shuffled = analyze(spark, h.write(tmp_path_factory.mktemp("b") / "history"))
    assert shuffled.counts() == base.counts()
    assert {k: v.examples for k, v in shuffled.anomalies.items()} == {
        k: v.examples for k, v in base.anomalies.items()}


@pytest.mark.slow  # make test-all, with the other property: the CI tier's budget
@SETTINGS
@given(sends=st.integers(1, 30), partition=st.integers(0, 1))
def test_adding_a_clean_unrelated_producer_changes_no_count(
        spark, tmp_path_factory, sends, partition):
    base = analyze(spark, anomalous().write(tmp_path_factory.mktemp("a") / "history")).counts()
    h = anomalous()
    end = 1 + max(r["offset"] for t in ("sends", "reads", "replicas") for r in h.rows[t]
                  if r["partition"] == partition)
    for seq in range(sends):
        h.send(9, seq, partition, end + seq).read("drain", partition, end + seq, 9, seq)
        for b in (1, 2, 3):
            h.replica(b, partition, end + seq, 9, seq)
    h.drop("events", kind="final-end", partition=partition)
    h.event("drain", "final-end", partition=partition, offset=end + sends, detail="reached")
    assert analyze(spark, h.write(tmp_path_factory.mktemp("b") / "history")).counts() == base
