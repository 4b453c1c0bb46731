"""iptables and tc rules applied inside node containers: the shell fragments for partitions and link
faults."""

from __future__ import annotations

CHAIN = "KCHAOS"
CHAIN_OUT = "KCHAOS-OUT"  # what the node sends: only the responses a hold-requests fault holds
# Create our chains once, hooked into INPUT and OUTPUT; every fault rule lives in them, so heal is
# one flush each.
ENSURE_CHAIN = "; ".join(f"iptables -N {c} 2>/dev/null; iptables -C {hook} -j {c} 2>/dev/null || "
                         f"iptables -I {hook} -j {c}"
                         for c, hook in ((CHAIN, "INPUT"), (CHAIN_OUT, "OUTPUT")))
FLUSH = (f"iptables -F {CHAIN} 2>/dev/null; iptables -F {CHAIN_OUT} 2>/dev/null; "
         "tc qdisc del dev eth0 root 2>/dev/null; true")


def drop_from(ips: list[str], port: int | None = None) -> str:
    """Drop every packet arriving from these peer addresses (only those for the local `port`, when
    given: a connection this node opened to a peer's listener still gets its answers)."""
    ports = f" -p tcp --dport {port}" if port else ""
    return " && ".join(f"iptables -A {CHAIN} -s {ip}{ports} -j DROP" for ip in ips)


def block_port(port: int, reset: bool = False) -> str:
    """Drop (or answer with TCP RST) every packet arriving for a listener port."""
    target = "REJECT --reject-with tcp-reset" if reset else "DROP"
    return f"iptables -A {CHAIN} -p tcp --dport {port} -j {target}"


def lose(probability: float) -> str:
    """Drop arriving packets at random with this probability."""
    return f"iptables -A {CHAIN} -m statistic --mode random --probability {probability:.4f} -j DROP"


def cap_bandwidth(kbit: int) -> str:
    """Shape outgoing traffic with a token bucket (tc tbf)."""
    return f"tc qdisc replace dev eth0 root tbf rate {kbit}kbit burst 32kbit latency 400ms"


def script(*fragments: str) -> str:
    """One shell script that ensures the chain then applies the fragments, failing on the first
    error."""
    body = " && ".join(f"( {f} )" for f in fragments if f)
    return f"{ENSURE_CHAIN}; {body}" if body else ENSURE_CHAIN
