"""The latency fault's pieces that need no broker: which port a link is, which queue a delay gets,
the row's evidence check, which requests start a hold."""

from __future__ import annotations

import os
import subprocess

import pytest

from contracts.errors import ClusterError
from contracts.faultlines import REQUEST_GATES, Gate
from contracts.versions import DEFAULT_VERSION
from faults.holds import peers
from harness import gobuild, netdelay
from harness.jars import fetch_jars


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
    # a hold longer than its op counts what still waits to land
    assert netdelay.read({"packets": 3, "held_mean_ms": 3000.2, "errors": 0, "waiting": 9},
                         "kafka-2").waiting == 9
    with pytest.raises(ClusterError, match="netdelay on kafka-2"):
        netdelay.read({"queue": 2}, "kafka-2")


TCP = """  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid
   0: 00000000:EDB9 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0
   4: 020019AC:CCD8 030019AC:2385 01 00000000:00000000 02:000AF69C 00000000     0
   5: 020019AC:EDB9 010019AC:D1E0 01 00000000:00000000 02:000AFAE3 00000000     0
   6: 020019AC:EDB9 010019AC:D1DF 06 00000000:00000000 03:000011FE 00000000     0
  sl  local_address                         remote_address                        st tx_queue
   0: 0000000000000000FFFF0000020019AC:EDB9 0000000000000000FFFF0000010019AC:D1DE 01 0000
"""


def test_a_hold_takes_the_established_connections_to_the_port_in_either_table_only():
    # 0xEDB9 = 60857: listening (0A) and closing (06) sockets are no connection to hold, and a
    # connection out of the broker from that port number's peer is not one to it
    assert peers(TCP, 60857) == [0xD1DE, 0xD1E0]


def test_the_hold_rule_matches_packets_for_the_port_from_the_held_peers_fifteen_a_rule():
    script = netdelay.fragment(4, 15000, 0, 60857, list(range(40000, 40016)))
    rules = [r for r in script.split("; ") if r.startswith("iptables")]
    assert len(rules) == 2 and all("--dport 60857 -m multiport --sports 4" in r for r in rules)
    assert rules[1].startswith("iptables -A KCHAOS -p tcp ! -i lo --dport 60857 -m multiport "
                               "--sports 40015 -j NFQUEUE --queue-num 4")


def test_a_commit_gate_starts_netdelay_with_commits_and_gets_a_queue_of_its_own():
    commit = netdelay.Reading(60857, gate=REQUEST_GATES["EndTxn(commit)"])
    any_end = netdelay.Reading(60857, gate=REQUEST_GATES["EndTxn"])
    assert "-port 60857 -gate 26 -commits -stats" in netdelay.fragment(5, 3000, 0, 60857, [40000],
                                                                       commit)
    assert "-port 60857 -gate 26 -stats" in netdelay.fragment(6, 3000, 0, 60857, [40000], any_end)
    assert "-gate" not in netdelay.fragment(7, 3000, 0, 60857, [40000])
    assert netdelay.queue(3000, 0, commit) != netdelay.queue(3000, 0, any_end)


def test_a_response_hold_queues_what_the_listener_sends_and_what_it_is_asked_loopback_included():
    reading = netdelay.Reading(9094, responses=True, gate=REQUEST_GATES["Produce"])
    script = netdelay.fragment(8, 2000, 0, 9094, reading=reading)
    rules = [r for r in script.split("; ") if r.startswith("iptables")]
    assert "-port 9094 -responses -gate 0 -stats" in script
    assert rules == ["iptables -A KCHAOS-OUT -p tcp --sport 9094 -j NFQUEUE --queue-num 8",
                     "iptables -A KCHAOS -p tcp --dport 9094 -j NFQUEUE --queue-num 8"]
    assert netdelay.port("remote-metadata", 40123, False) == 9094


def test_a_hold_until_the_op_ends_a_drop_or_a_reset_is_a_flag_and_a_queue_and_heals_by_signal():
    hold, drop, reset = (netdelay.Reading(9092, gate=REQUEST_GATES["WriteTxnMarkers"], action=a)
                         for a in ("hold", "drop", "reset"))
    assert "-port 9092 -hold -gate 27 -stats" in netdelay.fragment(9, 1, 0, 9092, [40000], hold)
    assert "-port 9092 -drop -gate 27 -stats" in netdelay.fragment(10, 1, 0, 9092, [40000], drop)
    script = netdelay.fragment(12, 1, 0, 9092, [4000], reset)
    assert f"-port 9092 -reset -mark {netdelay.RESET_MARK} -gate 27 -stats" in script
    assert script.index(f"--mark {netdelay.RESET_MARK} -j REJECT --reject-with tcp-reset") < \
        script.index("-j NFQUEUE")  # a marked retransmission is answered before it is queued
    assert len({netdelay.queue(1, 0, r) for r in (hold, drop, reset)}) == 3
    assert netdelay.heal(9) == "kill -USR1 $(cat /run/netdelay-9.pid) 2>/dev/null; true"


def test_held_frames_are_read_by_api_key_with_their_examples():
    held = netdelay.read({"packets": 5, "held_mean_ms": 2000.0, "errors": 0,
                          "matched": {"0": 4, "3": 1},
                          "examples": [{"n": 1, "api_key": 0, "response": True}]}, "kafka-1")
    assert held.matched == ((0, 4), (3, 1)) and held.examples[0]["api_key"] == 0


def test_netdelay_reads_an_end_txn_s_committed_field_in_each_encoding():
    # harness/docker/netdelay/*_test.go build EndTxn requests of versions 0 to 5, cut and whole,
    # request and response headers of every API key and version netdelay reads, and walk every
    # response schema of the default release's kafka-clients jar at every version
    jar = fetch_jars(DEFAULT_VERSION) / f"kafka-clients-{DEFAULT_VERSION}.jar"
    done = subprocess.run(["go", "test", "-count=1", "."], cwd=gobuild.SOURCES / "netdelay",
                          capture_output=True, text=True,
                          env=os.environ | {"CGO_ENABLED": "0", "KCHAOS_CLIENTS_JAR": str(jar)})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


def test_an_error_answer_names_its_code_and_the_running_release_s_clients_jar():
    error = netdelay.Reading(9092, True, Gate(0), "error", 6, "kchaos-")
    script = netdelay.fragment(11, 100, 0, 9092, reading=error)
    assert "-port 9092 -responses -gate 0 -client kchaos- -error 6 -schemas " in script
    assert '/opt/kafka/release 2>/dev/null || echo /opt/kafka/libs)"/kafka-clients-*.jar' in script
    assert "-hold" not in script and "-drop" not in script


def test_a_hold_of_a_node_s_own_zookeeper_connection_reads_zookeeper_frames_the_other_way_round():
    zk = netdelay.Reading(2181, True, REQUEST_GATES["ZooKeeper.multi"], "drop", zookeeper=True)
    script = netdelay.fragment(13, 1, 0, 2181, reading=zk)
    assert "-port 2181 -responses -drop -gate 14 -zookeeper -stats" in script
    assert "iptables -A KCHAOS-OUT -p tcp --dport 2181 -j NFQUEUE" in script  # its requests leave
    assert "iptables -A KCHAOS -p tcp --sport 2181 -j NFQUEUE" in script  # ZooKeeper's answers
