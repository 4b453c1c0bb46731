"""pytest plugin (entry point `kafka_chaos`): fixtures `kafka_cluster` and `chaos_run` for your own
chaos tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from contracts.versions import DEFAULT_VERSION
from harness.broker_config import ClusterSpec
from harness.cluster import Cluster
from harness.engine import ensure_engine
from harness.images import ensure_kafka_image
from kchaos.catalog import expand, load
from runloop.check import Outcome, run_and_check


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kafka-chaos")
    group.addoption("--kafka-version", default=os.environ.get("KCHAOS_KAFKA"),
                    help="Kafka version for kafka_cluster / chaos_run (default: kafka-chaos's "
                         "default)")


@pytest.fixture
def kafka_version(request: pytest.FixtureRequest) -> str:
    """The Kafka version the fixtures start (--kafka-version, KCHAOS_KAFKA, or the default)."""
    return request.config.getoption("--kafka-version") or DEFAULT_VERSION


@pytest.fixture
def kafka_cluster(kafka_version: str):
    """A running 3-broker KRaft cluster of `--kafka-version`, removed afterwards whatever
    happens."""
    ensure_engine()
    ensure_kafka_image(kafka_version)
    with Cluster(ClusterSpec(version=kafka_version)) as cluster:
        yield cluster


@pytest.fixture
def chaos_run(tmp_path: Path, kafka_version: str):
    """Run a scenario (a dict or a YAML path) end to end; returns each run's `Outcome` (result,
    analysis, dir)."""
    def run(scenario: dict | str | Path) -> list[Outcome]:
        if isinstance(scenario, dict):
            scenarios = expand({"kafka": {"version": kafka_version}} | scenario, "chaos_run")
        else:
            scenarios = load(Path(scenario))
        ensure_engine()
        return [run_and_check(s, tmp_path / "runs") for s in scenarios]

    return run
