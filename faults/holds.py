"""Packets held in userspace (netdelay) for the op's hold: `latency` on one of the targets' links,
and `hold-requests` on one listener. Requests: what clients already sent on their connections
arrives late while connections opened meanwhile pass, so a retried request is answered first and
the stale one lands later (Jepsen's KAFKA-17754 trigger). Responses: the listener's answers arrive
late, so the asker waits while the broker has already acted (the remote-retention copy race)."""

from __future__ import annotations

import time
from collections.abc import Callable

from contracts.faultlines import API_NAMES, ERROR_CODES, REQUEST_GATES, ZK_NAMES
from contracts.scenario import FaultSpec
from faults.ops import Ctx, NoEffect, expect_rules
from harness import netdelay

ESTABLISHED = "01"  # /proc/net/tcp's state of an established connection
EXAMPLES = 20  # frames an op's row shows whole
STATS_S = 0.3  # netdelay rewrites its stats file several times a second
EXAMPLE_FIELDS = ("api_version", "correlation_id", "client_id", "topic", "partition", "response",
                  "held_ms", "codes")


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


def held_for(ctx: Ctx, spec: FaultSpec, targets: list[int], queue_of: Callable[[int], int],
             rule: Callable[[int], str | None],
             what: str) -> tuple[dict[int, netdelay.Delayed], dict[int, netdelay.Delayed]]:
    """Each target's netdelay counts for its queue before and after the op's hold, during which
    the rule `rule` gives each target (none: no rule) sends its packets there; the after counts
    are of the targets still running."""
    before = {t: ctx.cluster.node(t).net_delay(queue_of(t)) for t in targets}
    try:
        for t in targets:
            if (fragment := rule(t)) is not None:
                ctx.cluster.firewall.link_fault(t, fragment, ctx.owner)
        expect_rules(ctx, targets, what)
        ctx.hold(spec.for_)
        after = {t: ctx.cluster.node(t).net_delay(queue_of(t)) for t in targets
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
    before, after = held_for(ctx, spec, targets, lambda _: q, rule, "the latency rule")
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
    """Delay by `latency_ms` (or hold, drop or reset until the op ends), the packets of
    the targets' listener on `link`: the requests of the connections open when the op starts, or
    with `direction: response` every answer the listener sends. With a `request`, each connection
    only from its first request of that kind (or answer to one) on; with action error, each answer
    to one goes at once with its error codes set. The row says what was held, and the frames."""
    gate = REQUEST_GATES.get(spec.request)
    responses = spec.direction == "response"
    zookeeper = bool(ctx.cluster.zookeeper_ids())
    on_zookeeper = zookeeper and spec.link == "controller"  # the node's own ZooKeeper connection
    held: dict[int, list[int]] = {}

    def reading(t: int) -> netdelay.Reading:  # the clients' listener has a port per broker
        port = netdelay.port(spec.link, ctx.cluster.node(t).external_port or 0, zookeeper)
        return netdelay.Reading(port, responses, gate, spec.action,
                                ERROR_CODES.get(spec.error or "", 0), spec.client_id,
                                zookeeper=on_zookeeper)

    def queue_of(t: int) -> int:
        return netdelay.queue(spec.latency_ms, 0, reading(t))

    def rule(t: int) -> str | None:
        r, q = reading(t), queue_of(t)
        if responses:
            return netdelay.fragment(q, spec.latency_ms, 0, r.port, reading=r)
        held[t] = peers(ctx.cluster.node(t).sh("cat /proc/net/tcp /proc/net/tcp6")[1], r.port)
        return netdelay.fragment(q, spec.latency_ms, 0, r.port, held[t], r) if held[t] else None
    try:
        before, after = held_for(ctx, spec, targets, queue_of, rule, "the hold rule")
    finally:  # held_for lifted the rules: what is held until the op ends goes now
        if spec.action in ("hold", "drop", "reset"):
            for t in targets:
                ctx.cluster.node(t).sh_if_running(netdelay.heal(queue_of(t)))
    if spec.action == "hold":  # a held frame is counted as it goes through, after the heal
        time.sleep(STATS_S)
        after = {t: ctx.cluster.node(t).net_delay(queue_of(t)) for t in after
                 if t not in ctx.cluster.stopped()}
    return _held_row(spec, gate is not None and spec.action != "error",
                     held if not responses else None, before, after,
                     ZK_NAMES if on_zookeeper else API_NAMES)


def _held_row(spec: FaultSpec, gated: bool, connections: dict[int, list[int]] | None,
              before: dict[int, netdelay.Delayed], after: dict[int, netdelay.Delayed],
              names: dict[int, str]) -> dict:
    """The op's row: per broker the packets held (let through, or still waiting to land
    `latency_ms` after they came), the connections and frames held (named by `names`), and the
    last frames whole."""
    packets = {t: max(0, a.packets - before[t].packets) + a.waiting
               + sum(max(0, n - was) for n, was in ((a.dropped, before[t].dropped),
                                                      (a.answered, before[t].answered),
                                                      (a.reset, before[t].reset)))
               for t, a in after.items()}
    if not any(packets.values()):
        raise NoEffect(f"hold-requests: no {spec.direction} on the {spec.link} listener of brokers "
                       f"{sorted(before)} was held" + (f" after a {spec.request} request" if gated
                                                       else ""))
    rows, examples = {}, []
    for t, a in after.items():
        was = dict(before[t].matched)
        frames = {names.get(k, str(k)): n - was.get(k, 0) for k, n in a.matched
                  if n > was.get(k, 0)}
        rows[str(t)] = ({"packets": packets[t], "frames": frames}
                        | ({"dropped": a.dropped - before[t].dropped} if spec.action == "drop"
                           else {})
                        | ({"answered": a.answered - before[t].answered}
                           if spec.action == "error" else {})
                        | ({"reset": a.reset - before[t].reset} if spec.action == "reset"
                           else {})
                        | ({"connections": len(connections.get(t, []))} if connections is not None
                           else {})
                        | ({"gated": max(0, a.gated - before[t].gated)} if gated else {}))
        done = sum(n for _, n in before[t].matched)
        examples += [{"broker": t, "api": names.get(e.get("api_key"), e.get("api_key")),
                      **{k: e.get(k) for k in EXAMPLE_FIELDS}}
                     for e in a.examples if e.get("n", 0) > done]
    return {"latency_ms": spec.latency_ms, "request": spec.request, "link": spec.link,
            "direction": spec.direction, "action": spec.action, "held": rows,
            "examples": examples[:EXAMPLES]} | ({"error": spec.error} if spec.error else {}) | (
                {"client_id": spec.client_id} if spec.client_id else {})
