"""The Spark checkers count what the reference checker (tests/oracle.py, written from the docs
alone) counts, on random histories that hold every anomaly it judges."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reports.analysis import analyze
from tests import oracle
from tests.random_histories import random_history

TOPICS = 10  # independent topics per history
JUDGED = ("lost-write", "unseen", "duplicate", "inconsistent-offset", "nonmonotonic-send",
          "poll-skip", "nonmonotonic-poll", "aborted-read", "unexpected", "vanished-read",
          "replica-divergence")


def test_the_random_histories_hold_every_anomaly_the_oracle_judges():
    found = {k: 0 for k in JUDGED}
    for seed in range(5):
        for k, n in oracle.counts(random_history(random.Random(seed), TOPICS).rows).items():
            found[k] += n
    assert set(found) == set(JUDGED) and all(found.values()), found


def agree(spark, directory, seed: int) -> None:
    h = random_history(random.Random(seed), TOPICS)
    expected = oracle.counts(h.rows)
    counts = analyze(spark, h.write(directory / "history")).counts()
    differ = {k: (counts[k], n) for k, n in expected.items() if counts[k] != n}
    assert counts == dict.fromkeys(counts, 0) | expected, differ


def examples(n: int) -> settings:
    """n examples, the same every run (no flaky seeds)."""
    return settings(max_examples=n, deadline=None, suppress_health_check=list(HealthCheck),
                    derandomize=True)


@examples(5)
@given(seed=st.integers(0, 2**32 - 1))
def test_spark_counts_what_the_reference_checker_counts(spark, tmp_path_factory, seed):
    agree(spark, tmp_path_factory.mktemp("h"), seed)


@pytest.mark.slow  # make test-all: 200 topics' histories
@examples(20)
@given(seed=st.integers(0, 2**32 - 1))
def test_spark_counts_what_the_reference_checker_counts_on_200_histories(
        spark, tmp_path_factory, seed):
    agree(spark, tmp_path_factory.mktemp("h"), seed)
