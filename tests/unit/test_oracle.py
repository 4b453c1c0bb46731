"""The Spark checkers count what the reference checker (tests/oracle.py, written from the docs
alone) counts, on random plain and transactional histories that hold every anomaly it judges."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from reports.analysis import analyze
from reports.frames import Readers
from tests import oracle
from tests.random_histories import random_history
from tests.random_txn_histories import random_txn_history

TOPICS = 10  # independent topics per history
JUDGED = ("lost-write", "unseen", "duplicate", "inconsistent-offset", "nonmonotonic-send",
          "poll-skip", "nonmonotonic-poll", "aborted-read", "unexpected", "vanished-read",
          "replica-divergence")
TXN_JUDGED = ("lost-committed", "precommitted-read", "torn-transaction", "aborted-read",
              "poll-skip", "committed-unread", "eos-duplicate", "eos-loss")


def test_the_random_histories_hold_every_anomaly_the_oracle_judges():
    found = dict.fromkeys(JUDGED, 0)
    for seed in range(5):
        for k, n in oracle.counts(random_history(random.Random(seed), TOPICS).rows).items():
            found[k] = found.get(k, 0) + n
    assert all(found[k] for k in JUDGED), found


def test_the_random_transactional_histories_hold_every_anomaly_of_transactions_and_groups():
    found = dict.fromkeys(TXN_JUDGED, 0)
    for seed in range(5):
        h, named = random_txn_history(random.Random(seed), TOPICS)
        for k, n in oracle.counts(h.rows, named).items():
            found[k] = found.get(k, 0) + n
    assert all(found[k] for k in TXN_JUDGED), found


def agree(spark, directory, seed: int) -> None:
    """Both checkers' counts of one plain and one transactional history."""
    plain = random_history(random.Random(seed), TOPICS)
    txn, named = random_txn_history(random.Random(seed), TOPICS)
    readers = Readers(tuple(sorted(named.contiguous)), tuple(sorted(named.committed)),
                      named.copy_topic)
    cases = ((plain, oracle.Named(), None), (txn, named, readers))
    for i, (h, told, named_to_spark) in enumerate(cases):
        expected = oracle.counts(h.rows, told)
        history = h.write(directory / f"history-{i}")
        counts = analyze(spark, history, named_to_spark).counts()
        differ = {k: (counts[k], n) for k, n in expected.items() if counts[k] != n}
        assert counts == dict.fromkeys(counts, 0) | expected, differ


def examples(n: int) -> settings:
    """n examples, the same every run (no flaky seeds), not shrunk: a failing seed is a history
    already, and shrinking one Spark analysis at a time takes minutes."""
    return settings(max_examples=n, deadline=None, suppress_health_check=list(HealthCheck),
                    derandomize=True, phases=(Phase.explicit, Phase.generate))


@examples(1)  # the CI tier: one plain and one transactional history; test-all runs 200
@given(seed=st.integers(0, 2**32 - 1))
def test_spark_counts_what_the_reference_checker_counts(spark, tmp_path_factory, seed):
    agree(spark, tmp_path_factory.mktemp("h"), seed)


@pytest.mark.slow  # make test-all: 200 history directories (100 plain, 100 transactional)
@examples(100)
@given(seed=st.integers(0, 2**32 - 1))
def test_spark_counts_what_the_reference_checker_counts_on_200_histories(
        spark, tmp_path_factory, seed):
    agree(spark, tmp_path_factory.mktemp("h"), seed)
