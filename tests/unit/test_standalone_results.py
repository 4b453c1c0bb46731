"""The standalone benchmark's comparison names exactly what differs between two analyses'
results."""

from __future__ import annotations

import copy

from bench.spark_cluster import differences

RESULTS = {"master": "local[2]",
           "anomalies": {"lost-write": {"count": 1, "examples": [{"producer": 0, "seq": 7}],
                                        "span": {}},
                         "duplicate": {"count": 0, "examples": [], "span": {}}},
           "metrics": {"acked": 10, "latency_ms": {"p99": 4.5}}}


def test_identical_results_differ_in_nothing_but_their_master():
    other = copy.deepcopy(RESULTS) | {"master": "spark://127.0.0.1:7077"}
    assert differences(RESULTS, other) == []


def test_an_example_a_count_or_a_metric_that_differs_is_named():
    other = copy.deepcopy(RESULTS)
    other["anomalies"]["lost-write"]["examples"][0]["seq"] = 8
    other["metrics"]["latency_ms"]["p99"] = 4.6
    other["anomalies"]["unseen"] = {"count": 0, "examples": [], "span": {}}
    assert differences(RESULTS, other) == ["lost-write", "unseen", "metrics.latency_ms"]
