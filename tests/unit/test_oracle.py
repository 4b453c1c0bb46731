"""The Spark checkers count what the reference checker (tests/oracle.py, written from the docs alone) counts, on
random histories that hold every anomaly it judges."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reports.analysis import analyze
from tests import oracle
from tests.random_histories import random_history

TOPICS = 10  # independent topics per history: 20 examples check 200 topics' histories
JUDGED = ("lost-write", "unseen", "duplicate", "inconsistent-offset", "nonmonotonic-send", "poll-skip",
          "nonmonotonic-poll", "aborted-read", "unexpected", "vanished-read", "replica-divergence")


def test_the_random_histories_hold_every_anomaly_the_oracle_judges():
    found = {k: 0 for k in JUDGED}
    for seed in range(5):
        for k, n in oracle.counts(random_history(random.Random(seed), TOPICS).rows).items():
            found[k] += n
    assert set(found) == set(JUDGED) and all(found.values()), found


@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(seed=st.integers(0, 2**32 - 1))
def test_spark_counts_what_the_reference_checker_counts(spark, tmp_path_factory, seed):
    h = random_history(random.Random(seed), TOPICS)
    expected = oracle.counts(h.rows)
    counts = analyze(spark, h.write(tmp_path_factory.mktemp("h") / "history")).counts()
    assert counts == dict.fromkeys(counts, 0) | expected, {k: (counts[k], n) for k, n in expected.items()
                                                           if counts[k] != n}
