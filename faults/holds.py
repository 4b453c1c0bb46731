"""Packets held in userspace (netdelay) for the op's hold: `latency` on one of the targets' links,
and `hold-requests`, where what clients already sent on their connections arrives late while
connections opened meanwhile pass. A client that gives a request up and retries it on a new
connection is answered first, and the stale request lands later (Jepsen's KAFKA-17754 trigger)."""

from __future__ import annotations

from collections.abc import Callable

from contracts.faultlines import REQUEST_GATES
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


def held_for(ctx: Ctx, spec: FaultSpec, targets: list[int], q: str,
             rule: Callable[[int], str | None],
             what: str) -> tuple[dict[int, netdelay.Delayed], dict[int, netdelay.Delayed]]:
    """Each target's netdelay counts for queue `q` before and after the op's hold, during which
    the rule `rule` gives each target (none: no rule) sends its packets there; the after counts
    are of the targets still running."""
    before = {t: ctx.cluster.node(t).net_delay(q) for t in targets}
    try:
        for t in targets:
            if (fragment := rule(t)) is not None:
                ctx.cluster.firewall.link_fault(t, fragment, ctx.owner)
        expect_rules(ctx, targets, what)
        ctx.hold(spec.for_)
        after = {t: ctx.cluster.node(t).net_delay(q) for t in targets
                 if t not in ctx.cluster.stopped()}
    finally:
        ctx.cluster.firewall.lift(ctx.owner)
    return before, after


def latency(ctx: Ctx, spec: FaultSpec, targets: list[int]) -> dict:
    """Delay every packet the targets receive on one link (clients, replication or controller) by
    the op's latency plus or minus its jitter for the hold; the row says how many packets each
    broker's netdelay held, and how long."""
    q = netdelay.queue(spec.latency_ms, spec.jitter_ms)
    zookeeper = bool(ctx.cluster.zookeeper_ids())

    def rule(t: int) -> str:
        port = netdelay.port(spec.link, ctx.cluster.node(t).external_port or 0, zookeeper)
        return netdelay.fragment(q, spec.latency_ms, spec.jitter_ms, port)
    before, after = held_for(ctx, spec, targets, q, rule, "the latency rule")
    held = {t: a.packets - (before[t].packets if a.packets >= before[t].packets else 0) for t,
            a in after.items()}
    if not any(held.values()):
        raise NoEffect(f"latency: no {spec.link} packet reached brokers {targets} while the rule "
                       "was in force")
    return {"link": spec.link, "latency_ms": spec.latency_ms, "jitter_ms": spec.jitter_ms,
            "delayed": {str(t): {"packets": held[t],
                                 "held_mean_ms": round(after[t].held_mean_ms, 1),
                                 "errors": after[t].errors} for t in after}}


def hold_requests(ctx: Ctx, spec: FaultSpec, targets: list[int]) -> dict:
    """Delay every packet of the client connections each target holds when the op starts by
    `latency_ms`, for the op's hold; with a `request`, each connection only from its first request
    of that kind on. The row says how many connections and packets were held."""
    gate = REQUEST_GATES.get(spec.request)
    q = netdelay.queue(spec.latency_ms, 0, gate)
    held: dict[int, list[int]] = {}

    def rule(t: int) -> str | None:
        node = ctx.cluster.node(t)
        port = node.external_port or 0
        held[t] = peers(node.sh("cat /proc/net/tcp /proc/net/tcp6")[1], port)
        return netdelay.fragment(q, spec.latency_ms, 0, port, held[t], gate) if held[t] else None
    before, after = held_for(ctx, spec, targets, q, rule, "the hold rule")
    # what the hold took: let through already, or still waiting to land latency_ms after it came
    packets = {t: max(0, a.packets - before[t].packets) + a.waiting for t, a in after.items()}
    gated = {t: max(0, a.gated - before[t].gated) for t, a in after.items()}
    if not any(packets.values()):
        raise NoEffect(f"hold-requests: no packet of a held connection reached brokers {targets}"
                       + (f" after a {spec.request} request" if gate is not None else ""))
    return {"latency_ms": spec.latency_ms, "request": spec.request,
            "held": {str(t): {"connections": len(held.get(t, [])), "packets": packets[t]}
                     | ({"gated": gated[t]} if gate is not None else {}) for t in after}}
