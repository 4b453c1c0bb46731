"""netdelay, the userspace packet delayer behind the `latency` fault: the kernel here has no netem,
so an iptables NFQUEUE rule inside a broker's container hands matching packets to netdelay, which
lets each through after the delay. Built once from harness/docker/netdelay with Go and mounted into
the container read-only."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

from contracts.describe import progress
from contracts.errors import ClusterError
from contracts.faultlines import Action, Gate, Link
from harness import gobuild
from harness.broker_config import CONTROLLER_PORT, INTERNAL_PORT, REMOTE_METADATA_PORT, ZK_PORT
from harness.netrules import CHAIN, CHAIN_OUT
from harness.releases import HOME, RELEASE_FILE

IN_CONTAINER = "/opt/kchaos/netdelay"
# action reset: the mark netdelay gives a packet for the chain's REJECT rule to answer with a reset
RESET_MARK = 0x4B43
# the running release's kafka-clients jar, whose response schemas an error answer is written by
CLIENTS_JAR = (f'"$(ls "$(cat {HOME}/{RELEASE_FILE} 2>/dev/null || echo {HOME}/libs)"/'
               'kafka-clients-*.jar | head -1)"')
_lock = threading.Lock()


@dataclass(frozen=True)
class Reading:
    """What a netdelay reads of one listener's Kafka frames: its port, whether it holds what the
    listener answers (else what arrives), and the request that starts a connection's hold."""

    port: int
    responses: bool = False
    gate: Gate | None = None
    action: Action = "delay"  # or hold, drop or reset (each until `heal`), or error
    error: int = 0  # action error: the code the answers to the gate's request get
    client: str | None = None  # the prefix of the client ids whose requests the gate takes
    # the node's own ZooKeeper connection: the port is the far end's, and the frames ZooKeeper's
    zookeeper: bool = False


_queues: dict[tuple[int, int, Reading | None], int] = {}


@dataclass(frozen=True)
class Delayed:
    """What one broker's netdelay did for one queue: packets let through, how long they were held on
    average, and how many it holds now."""

    packets: int
    held_mean_ms: float
    errors: int
    waiting: int = 0  # packets it holds now, not yet let through
    gated: int = 0  # connections a request its gate names started holding
    dropped: int = 0  # packets dropped, not delayed
    answered: int = 0  # answers let through with their error codes set
    reset: int = 0  # packets sent on as TCP resets
    matched: tuple[tuple[int, int], ...] = ()  # frames held, as (API key, count)
    examples: tuple[dict, ...] = ()  # the last frames held: number, header, direction, time held


def binary(say=progress) -> Path:
    """The netdelay executable for the current sources, built on first use."""
    return gobuild.binary("netdelay", "the latency fault's packet delayer", say)


def queue(delay_ms: int, jitter_ms: int, reading: Reading | None = None) -> int:
    """The NFQUEUE number of one delay, jitter and reading of frames: one netdelay each, numbered
    in the order first asked for."""
    with _lock:
        return _queues.setdefault((delay_ms, jitter_ms, reading), len(_queues) + 1)


def reading_flags(reading: Reading | None) -> str:
    """netdelay's flags for what it reads (none: it holds every packet, unread)."""
    if reading is None:
        return ""
    gate, action = reading.gate, reading.action
    return (f"-port {reading.port} " + ("-responses " if reading.responses else "")
            + ("" if action in ("delay", "error") else f"-{action} ")
            + (f"-mark {RESET_MARK} " if action == "reset" else "")
            + (f"-gate {gate.api_key} " if gate else "") + ("-commits " if gate and gate.commits
                                                            else "")
            + (f"-client {reading.client} " if reading.client else "")
            + ("-zookeeper " if reading.zookeeper else "")
            + (f"-error {reading.error} -schemas {CLIENTS_JAR} " if action == "error" else ""))


def port(link: Link, client_port: int, zookeeper: bool) -> int:
    """The TCP port whose traffic (to or from it) makes up a link of a broker."""
    if link == "clients":
        return client_port
    if link == "replication":
        return INTERNAL_PORT
    if link == "remote-metadata":
        return REMOTE_METADATA_PORT
    return ZK_PORT if zookeeper else CONTROLLER_PORT


def heal(q: int) -> str:
    """The shell command that ends the queue's hold: what it holds goes through now, and no
    connection stays held or dropped."""
    return f"kill -USR1 $(cat /run/netdelay-{q}.pid) 2>/dev/null; true"


def stats_file(q: int) -> str:
    """Where the netdelay of queue `q` keeps its stats inside a container."""
    return f"/run/netdelay-{q}.json"


def fragment(q: int, delay_ms: int, jitter_ms: int, port: int, peers: list[int] | None = None,
             reading: Reading | None = None) -> str:
    """Start the queue's netdelay unless it runs, wait until it has bound the queue, then send every
    TCP packet arriving from or for `port` (loopback aside) to it; with `peers`, only the packets
    arriving for `port` from those remote ports (connections open now, not those opened later).
    A `reading` of responses sends what `port` answers instead, and what arrives for it, loopback
    included; with a gate, a connection's packets pass until a frame it names starts."""
    pid, stats, log = f"/run/netdelay-{q}.pid", stats_file(q), f"/run/netdelay-{q}.log"
    start = (f"rm -f {stats}; {IN_CONTAINER} -queue {q} -delay {delay_ms} -jitter {jitter_ms} "
             f"{reading_flags(reading)}-stats {stats} >{log} 2>&1 < /dev/null & echo $! > {pid}")
    rules = _rules(q, port, peers, reading)
    return (f"[ -x {IN_CONTAINER} ] || {{ echo 'netdelay is not mounted in this container'; exit "
            "1; "
            f"}}; [ \"$(cat /proc/$(cat {pid} 2>/dev/null)/comm 2>/dev/null)\" = netdelay ] || {{ "
            f"{start}; }}; i=0; while [ ! -s {stats} ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); "
            f"done; [ -s {stats} ] || {{ cat {log}; exit 1; }}; " + "; ".join(rules))


def _rules(q: int, port: int, peers: list[int] | None, reading: Reading | None) -> list[str]:
    """The iptables rules that send a link's packets to queue `q`: what arrives for a listener's
    port (from `peers`), or for a hold of answers both ways, turned round when the port is the
    far end's (ZooKeeper's); a reset first has marked packets answered with one."""
    refused = [f"iptables -A {c} -p tcp -m mark --mark {RESET_MARK} -j REJECT --reject-with "
               "tcp-reset" for c in (CHAIN, CHAIN_OUT) if reading and reading.action == "reset"]
    if reading is None or not reading.responses:
        return refused + [f"iptables -A {CHAIN} -p tcp ! -i lo {match} -j NFQUEUE --queue-num {q}"
                          for match in _matches(port, peers)]
    ours, theirs = ("--dport", "--sport") if reading.zookeeper else ("--sport", "--dport")
    return refused + [f"iptables -A {CHAIN_OUT} -p tcp {ours} {port} -j NFQUEUE --queue-num {q}",
                      f"iptables -A {CHAIN} -p tcp {theirs} {port} -j NFQUEUE --queue-num {q}"]


def _matches(port: int, peers: list[int] | None) -> list[str]:
    """iptables matches of a link's packets, or of those from `peers` to it (15 ports a rule)."""
    if peers is None:
        return [f"-m multiport --ports {port}"]
    return [f"--dport {port} -m multiport --sports {','.join(map(str, peers[i:i + 15]))}"
            for i in range(0, len(peers), 15)]


def read(stats: dict | None, alias: str) -> Delayed:
    """netdelay's parsed stats (nothing let through when it has none), or a ClusterError naming the
    broker when they lack a field."""
    if stats is None:
        return Delayed(0, 0.0, 0)
    try:
        return Delayed(int(stats["packets"]), float(stats["held_mean_ms"]), int(stats["errors"]),
                       int(stats.get("waiting", 0)), int(stats.get("gated", 0)),
                       int(stats.get("dropped", 0)), int(stats.get("answered", 0)),
                       int(stats.get("reset", 0)),
                       tuple(sorted((int(k), int(n))
                                    for k, n in (stats.get("matched") or {}).items())),
                       tuple(stats.get("examples") or ()))
    except (KeyError, TypeError, ValueError) as exc:
        raise ClusterError(f"netdelay on {alias} left no readable stats: "
                           f"{str(stats)[:300]!r}") from exc
