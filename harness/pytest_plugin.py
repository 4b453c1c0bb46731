"""pytest plugin (entry point `kafka_chaos`): fixtures `kafka_cluster` and `chaos_run` for your own chaos tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kafka-chaos")
    group.addoption("--kafka-version", default=os.environ.get("KCHAOS_KAFKA"),
                    help="Kafka version for kafka_cluster / chaos_run (default: kafka-chaos's default)")


@pytest.fixture
def kafka_version(request: pytest.FixtureRequest) -> str:
    from harness.images import DEFAULT_VERSION

    return request.config.getoption("--kafka-version") or DEFAULT_VERSION


@pytest.fixture
def kafka_cluster(kafka_version: str):
    """A running 3-broker KRaft cluster of `--kafka-version`, removed afterwards whatever happens."""
    from harness.cluster import Cluster, ClusterSpec
    from harness.engine import ensure_engine
    from harness.images import ensure_kafka_image

    ensure_engine()
    ensure_kafka_image(kafka_version)
    with Cluster(ClusterSpec(version=kafka_version)) as cluster:
        yield cluster


@pytest.fixture
def chaos_run(tmp_path: Path, kafka_version: str):
    """Run a scenario (a dict or a YAML path) end to end; returns the run's `Outcome` (verdict, analysis, dir)."""
    from harness.engine import ensure_engine
    from harness.scenario import expand, load
    from reports.pipeline import run_and_check

    def run(scenario: dict | str | Path):
        if isinstance(scenario, dict):
            scenarios = expand({"kafka": {"version": kafka_version}} | scenario, "chaos_run")
        else:
            scenarios = load(Path(scenario))
        ensure_engine()
        return [run_and_check(s, tmp_path / "runs") for s in scenarios]

    return run
