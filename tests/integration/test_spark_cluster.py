"""The cluster path is real: a Spark standalone master and two workers on 127.0.0.1 give the
local-mode results."""

from __future__ import annotations

import pytest

from bench import spark_cluster
from tests.histories import clean

# make test-all only: a standalone Spark cluster beside the local session
pytestmark = pytest.mark.slow


@pytest.fixture
def standalone(tmp_path):
    with spark_cluster.standalone(tmp_path / "spark", workers=2) as url:
        yield url


def test_standalone_cluster_gives_the_local_results(standalone, tmp_path):
    h = clean().drop("reads", producer=0, seq=0).drop("replicas", producer=0, seq=0)
    h.read("drain", 1, 6, 0, 1)  # and a duplicate
    history = h.write(tmp_path / "history")
    _, local = spark_cluster.results(history, None, timeout_s=600)
    _, remote = spark_cluster.results(history, standalone, timeout_s=600)
    assert remote["master"] == standalone and local["master"].startswith("local")
    assert spark_cluster.differences(local, remote) == []
    assert (local["anomalies"]["lost-write"]["count"] == 1
            and local["anomalies"]["duplicate"]["count"] == 1)
    assert remote["anomalies"]["lost-write"]["examples"][0]["seq"] == 0
