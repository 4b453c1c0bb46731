"""iptables rules the faults apply, as scripts."""

from __future__ import annotations

from harness import netrules


def test_a_port_cut_drops_what_peers_send_that_listener_and_spares_answers_to_own_requests():
    # A ZooKeeper-era leader cut off from its followers' fetches must still hear a follower
    # controller answer its AlterIsr, or it never learns that its ISR shrank.
    script = netrules.drop_from(["10.0.0.2", "10.0.0.3"], port=9092)
    assert script == ("iptables -A KCHAOS -s 10.0.0.2 -p tcp --dport 9092 -j DROP && "
                      "iptables -A KCHAOS -s 10.0.0.3 -p tcp --dport 9092 -j DROP")


def test_a_whole_peer_cut_drops_everything_it_sends():
    assert netrules.drop_from(["10.0.0.2"]) == "iptables -A KCHAOS -s 10.0.0.2 -j DROP"
