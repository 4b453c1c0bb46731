"""`hold-requests`: what clients already sent on their connections to the targets arrives late,
while connections opened meanwhile pass. A client that gives a request up and retries it on a new
connection is answered first, and the stale request lands later (Jepsen's KAFKA-17754 trigger)."""

from __future__ import annotations

from contracts.scenario import FaultSpec
from faults.ops import Ctx, NoEffect, expect_rules
from harness import netdelay

ESTABLISHED = "01"  # /proc/net/tcp's state of an established connection


def peers(tcp_table: str, port: int) -> list[int]:
    """The remote ports of the established connections to local `port` in /proc/net/tcp tables
    (their header lines are skipped)."""
    out = set()
    for line in tcp_table.splitlines():
        fields = line.split()
        if len(fields) > 3 and fields[3] == ESTABLISHED and int(fields[1].rsplit(":", 1)[1],
                                                                16) == port:
            out.add(int(fields[2].rsplit(":", 1)[1], 16))
    return sorted(out)


def hold_requests(ctx: Ctx, spec: FaultSpec, targets: list[int]) -> dict:
    """Delay every packet of the client connections each target holds when the op starts by
    `latency_ms`, for the op's hold; the row says how many connections and packets were held."""
    q = netdelay.queue(spec.latency_ms, 0)
    before = {t: ctx.cluster.node(t).net_delay(q) for t in targets}
    held: dict[int, list[int]] = {}
    try:
        for t in targets:
            node = ctx.cluster.node(t)
            port = node.external_port or 0
            held[t] = peers(node.sh("cat /proc/net/tcp /proc/net/tcp6")[1], port)
            if held[t]:
                ctx.cluster.firewall.link_fault(
                    t, netdelay.fragment(q, spec.latency_ms, 0, port, held[t]), ctx.owner)
        expect_rules(ctx, targets, "the hold rule")
        ctx.hold(spec.for_)
        after = {t: ctx.cluster.node(t).net_delay(q) for t in targets
                 if t not in ctx.cluster.stopped()}
    finally:
        ctx.cluster.firewall.lift(ctx.owner)
    # what the hold took: let through already, or still waiting to land latency_ms after it came
    packets = {t: max(0, a.packets - before[t].packets) + a.waiting for t, a in after.items()}
    if not any(packets.values()):
        raise NoEffect(f"hold-requests: no packet of a held connection reached brokers {targets}")
    return {"latency_ms": spec.latency_ms,
            "held": {str(t): {"connections": len(held.get(t, [])), "packets": packets[t]}
                     for t in after}}
