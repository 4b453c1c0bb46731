"""The latency fault's pieces that need no broker: which port a link is, which queue a delay gets,
the row's evidence check."""

from __future__ import annotations

import pytest

from contracts.errors import ClusterError
from harness import netdelay


@pytest.mark.parametrize(("link", "zookeeper", "port"),
                         [("clients", False, 40123), ("replication", False, 9092),
                          ("controller", False, 9093), ("controller", True, 2181)])
def test_each_link_is_the_port_its_traffic_uses(link, zookeeper, port):
    assert netdelay.port(link, 40123, zookeeper) == port


def test_one_queue_per_delay_and_jitter_and_the_same_one_when_asked_again():
    a, b = netdelay.queue(1234, 5), netdelay.queue(1234, 6)
    assert a != b and netdelay.queue(1234, 5) == a and 1 <= a <= 65535


def test_the_rule_waits_for_the_bound_queue_and_sends_only_that_port_to_it():
    script = netdelay.fragment(3, 250, 25, 9093)
    assert (script.index("-stats /run/netdelay-3.json")
            < script.index("while [ ! -s /run/netdelay-3.json ]"))
    assert script.endswith("-p tcp ! -i lo -m multiport --ports 9093 -j NFQUEUE --queue-num 3")


def test_stats_read_or_a_clear_error_naming_the_broker():
    held = netdelay.read({"packets": 12, "held_mean_ms": 201.5, "errors": 0}, "kafka-2")
    assert held == netdelay.Delayed(12, 201.5, 0)
    assert netdelay.read(None, "kafka-2") == netdelay.Delayed(0, 0.0, 0)
    with pytest.raises(ClusterError, match="netdelay on kafka-2"):
        netdelay.read({"queue": 2}, "kafka-2")
