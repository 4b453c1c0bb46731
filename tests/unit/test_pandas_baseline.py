"""The benchmark's pandas baseline finds what the analysis finds, so `make bench` compares the same
checks."""

from __future__ import annotations

import pytest

from bench import synthetic
from bench.pandas_checks import check
from reports.analysis import analyze
from tests.unit.test_prefilter import every_mutation


def test_pandas_baseline_counts_what_the_analysis_counts(spark, tmp_path):
    d = every_mutation().write(tmp_path / "history")
    a, baseline = analyze(spark, d), check(d)
    assert baseline["counts"] == a.counts()
    assert sum(n > 0 for n in a.counts().values()) >= 9
    assert (baseline["metrics"]["recovered"],
            baseline["metrics"]["reads"]) == (a.metrics["recovered"],
                                                                              a.metrics["reads"])


@pytest.mark.slow  # make test-all: the benchmark's own history; the test above keeps the baseline
def test_the_synthetic_benchmark_history_holds_exactly_its_injected_anomalies(spark, tmp_path):
    expected = synthetic.generate(3_000, tmp_path / "history", chunk=1_000)
    counts = analyze(spark, tmp_path / "history").counts()
    assert {k: counts[k] for k in expected} == expected
    assert sum(counts.values()) == sum(expected.values())
    assert check(tmp_path / "history")["counts"] == counts
