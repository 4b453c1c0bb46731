"""Integration tests run real Kafka brokers in containers, one cluster at a time, and always clean up."""

from __future__ import annotations

import warnings

import docker
import pytest

from contracts.versions import SUPPORTED_VERSIONS
from harness.broker_config import ClusterSpec
from harness.cluster import Cluster
from harness.engine import ensure_engine
from harness.images import ensure_kafka_image
from harness.labels import OWNER, clean

pytestmark = pytest.mark.integration
FAST_ISR = {"replica.lag.time.max.ms": "6000"}


def pytest_collection_modifyitems(items):
    for item in items:
        if "integration" in str(item.fspath):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session", autouse=True)
def engine():
    """A Docker engine, the images, and no leftovers of an earlier crashed run (what `kchaos clean` removes)."""
    ensure_engine()
    for v in SUPPORTED_VERSIONS:
        ensure_kafka_image(v)
    containers, networks = clean()
    if containers or networks:
        warnings.warn(f"removed {containers} containers and {networks} networks left by an earlier run", stacklevel=1)


@pytest.fixture(scope="module", autouse=True)
def nothing_left_behind():
    """After every test module (whose clusters are shared by its tests): no labelled container or network."""
    yield
    client = docker.from_env()
    left = client.containers.list(all=True, filters={"label": OWNER})
    nets = client.networks.list(filters={"label": OWNER})
    assert not left and not nets, f"left behind: {[c.name for c in left]} {[n.name for n in nets]}"


@pytest.fixture(scope="module", params=SUPPORTED_VERSIONS)
def cluster(request):
    """A 3-broker KRaft cluster per supported version, shared by a module's tests (each test heals after itself)."""
    with Cluster(ClusterSpec(version=request.param, config=FAST_ISR)) as c:
        yield c


@pytest.fixture
def healed(cluster):
    """The module's cluster, healed and fully restarted after the test."""
    yield cluster
    cluster.heal()
    cluster.start_nodes([n.node_id for n in cluster.nodes if n.state() != "running"])
