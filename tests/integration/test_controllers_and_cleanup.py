"""Controllers (KRaft quorum and ZooKeeper era) fail over, and no run leaves a container behind."""

from __future__ import annotations

import subprocess
import sys

import docker
import pytest

from contracts import measured
from harness.broker_config import ClusterSpec
from harness.cluster import Cluster
from harness.labels import OWNER, labelled
from harness.metadata import wait_for
from tests.integration.test_cluster import TIMEOUT, new_topic


@pytest.mark.slow  # make test-all: ZooKeeper releases (3.9 and older) run nightly
def test_zookeeper_mode_comes_up_and_controller_failover_elects_another(tmp_path, monkeypatch):
    monkeypatch.setattr(measured, "_file", lambda: tmp_path / "restart-seconds.json")
    with Cluster(ClusterSpec(version="3.9.2", metadata="zookeeper")) as c:
        topic = new_topic(c)
        assert c.metadata.leader(topic, 0) in c.node_ids()
        old = c.metadata.controller()
        assert old in c.node_ids()
        c.node(old).kill()
        new = wait_for("a new ZooKeeper-era controller",
                       lambda: (x := c.metadata.controller()) not in (-1, old) and x, TIMEOUT)
        assert new in set(c.node_ids()) - {old}
        # at once: the killed broker's ephemeral znode must not make the restart exit
        c.start_node(old)
        wait_for("the killed broker back in the ISR",
                 lambda: old in c.metadata.isr(topic, 0) or None, TIMEOUT)
    assert measured.restart_seconds("3.9.2", "zookeeper",
                                    "kill")[1], "the restart was not measured for its mode"
    assert not measured.restart_seconds("3.9.2", "kraft", "kill")[1]
    assert not measured.restart_seconds("3.9.2", "zookeeper",
                                        "clean")[1], "a restart after a kill counted as clean"


def test_kraft_controller_is_a_voter_and_failover_elects_another():
    with Cluster(ClusterSpec()) as c:
        old = c.metadata.controller()
        assert old in c.spec.controllers()
        c.node(old).kill()
        new = wait_for("a new KRaft quorum leader",
                       lambda: (x := c.metadata.controller()) not in (-1, old) and x, TIMEOUT)
        assert new in set(c.spec.controllers()) - {old}


CRASHING = """
import sys
from harness.broker_config import ClusterSpec
from harness.cluster import Cluster
with Cluster(ClusterSpec(brokers=1)) as c:
    print("up", flush=True)
    {action}
"""


@pytest.mark.parametrize("action, code", [("raise RuntimeError('test fails half-way')", 1),
                                          ("import os, signal; os.kill(os.getpid(), "
                                           "signal.SIGTERM)", 143)])
def test_failing_or_terminated_run_leaves_no_container_or_network(action, code):
    done = subprocess.run([sys.executable, "-c", CRASHING.format(action=action)],
                          capture_output=True, text=True, timeout=180)
    assert "up" in done.stdout, done.stderr[-2000:]
    assert done.returncode == code
    client = docker.from_env()
    assert not labelled(client)
    assert not client.networks.list(filters={"label": OWNER})
