"""Integration tests run real Kafka brokers in containers, one cluster at a time, and always clean
up."""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable
from typing import Any

import docker
import pytest

from contracts.versions import DEFAULT_VERSION, SUPPORTED_VERSIONS
from harness.broker_config import ClusterSpec
from harness.cluster import Cluster
from harness.engine import ensure_engine
from harness.images import ensure_kafka_image
from harness.labels import OWNER, clean, labelled

pytestmark = pytest.mark.integration
FAST_ISR = {"replica.lag.time.max.ms": "6000"}


class Background:
    """A call on a daemon thread whose outcome the test must collect: `result` re-raises what the
    call raised and fails the test when the call has not finished in time."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        self._outcome: dict[str, Any] = {}
        self._thread = threading.Thread(target=self._run, args=(fn,), daemon=True)
        self._thread.start()

    def _run(self, fn: Callable[[], Any]) -> None:
        try:
            self._outcome["value"] = fn()
        except BaseException as e:  # handed to the test by result()
            self._outcome["error"] = e

    def done(self) -> bool:
        return not self._thread.is_alive()

    def result(self, timeout: float) -> Any:
        self._thread.join(timeout)
        if self._thread.is_alive():
            pytest.fail(f"the background call did not finish within {timeout} s")
        if "error" in self._outcome:
            raise self._outcome["error"]
        return self._outcome.get("value")


def pytest_collection_modifyitems(items):
    for item in items:
        if "integration" in str(item.fspath):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session", autouse=True)
def one_spark_jvm(spark):
    """The runs' analyses use the tests' JVM: a run would otherwise start one with its own options,
    and every later test would reuse it."""
    return spark


@pytest.fixture(scope="session", autouse=True)
def engine():
    """A Docker engine, the images, and no leftovers of an earlier crashed run (what `kchaos clean`
    removes)."""
    ensure_engine()
    for v in SUPPORTED_VERSIONS:
        ensure_kafka_image(v)
    containers, networks = clean()
    if containers or networks:
        warnings.warn(f"removed {containers} containers and {networks} networks left by an earlier "
                      "run", stacklevel=1)


@pytest.fixture(scope="module", autouse=True)
def nothing_left_behind():
    """After every test module (whose clusters are shared by its tests): no labelled container or
    network."""
    yield
    client = docker.from_env()
    left = labelled(client)
    nets = client.networks.list(filters={"label": OWNER})
    assert not left and not nets, f"left behind: {[c.name for c in left]} {[n.name for n in nets]}"


@pytest.fixture(scope="module",
                params=[v if v == DEFAULT_VERSION else pytest.param(v, marks=pytest.mark.slow)
                                        for v in SUPPORTED_VERSIONS])
def cluster(request):
    """A 3-broker KRaft cluster per supported version (the default's in `make test`, the others' in
    `make test-all`), shared by a module's tests (each test heals after itself)."""
    with Cluster(ClusterSpec(version=request.param, config=FAST_ISR)) as c:
        yield c


@pytest.fixture
def healed(cluster):
    """The module's cluster, healed and fully restarted after the test."""
    yield cluster
    cluster.heal()
    cluster.start_nodes([n.node_id for n in cluster.nodes if n.state() != "running"])
