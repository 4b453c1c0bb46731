"""KIP-853's controller replacement under load: a node added to the KRaft voters, then the active
controller removed, while the one removed is killed or the one added is cut off."""

from __future__ import annotations

import concurrent.futures as cf
import time
from collections.abc import Callable

from contracts.errors import ClusterError, first_line
from contracts.scenario import FaultSpec
from faults.ops import Ctx, NoEffect, Stalled, break_node, isolate_grudge
from faults.ports import QuorumControl

SETTLE_S = 120.0  # how long the voters may take to show a change, the disruption healed


def quorum_swap(ctx: Ctx, spec: FaultSpec, targets: list[int]) -> dict:
    """Add the lowest running node outside the voters, then remove the active controller (another
    voter if the added one leads), each retried until `describe --status` shows it; the removed one
    is the next op's to add."""
    q, began = _quorum(ctx), time.monotonic()
    before = q.status()[1]
    spare = next((n for n in sorted(ctx.cluster.node_ids())
                  if n not in before and ctx.cluster.node(n).state() == "running"), None)
    steps: dict = {}
    if spare is None and len(before) <= 3:
        raise NoEffect(f"quorum-swap: no running node outside the voters {before}")
    if spare is not None:  # else an earlier op added one and ended before its removal: finish it
        steps["add"] = _held(ctx, spec, "add", spare, {})
    leader, voters = q.status()  # leading now: the added node aside, whoever leads is removed
    removed = leader if leader != spare else min(set(voters) - {spare})
    steps["remove"] = _held(ctx, spec, "remove", removed, steps)
    return {"added": spare, "removed": removed, "voters_before": before,
            "voters_after": q.status()[1], "steps": steps,
            "took_s": round(time.monotonic() - began, 1)}


def _held(ctx: Ctx, spec: FaultSpec, verb: str, node: int, done: dict) -> dict:
    """One change, its node held from other lines' ops meanwhile."""
    with ctx.holding(node) as held:
        if not held:
            raise NoEffect(f"quorum-swap: the run ended before it could {verb} {node} "
                           f"(done: {done})")
        return _change(ctx, spec, verb, node)


def _quorum(ctx: Ctx) -> QuorumControl:
    if ctx.cluster.quorum is None:
        raise ClusterError("quorum-swap needs a cluster formatted with a dynamic quorum")
    return ctx.cluster.quorum


def _change(ctx: Ctx, spec: FaultSpec, verb: str, node: int) -> dict:
    """One change, its disruption begun a moment after the tool call, held for the line's `for`,
    then healed; the call retried until the voters show the change."""
    q = _quorum(ctx)
    call: Callable[[int], None] = q.add if verb == "add" else q.remove
    disrupt = {"add": "isolate-added", "remove": "kill-removed"}[verb]
    errors: list[str] = []
    with cf.ThreadPoolExecutor(1, thread_name_prefix=f"quorum-{verb}") as pool:
        first = pool.submit(call, node)
        if spec.disrupt == disrupt:
            ctx.stop.wait(ctx.rng.uniform(0.0, 1.0))
            _disrupt(ctx, spec, verb, node)
        if exc := first.exception():
            errors.append(first_line(exc))
    tries, deadline = 1, time.monotonic() + SETTLE_S
    while not _shows(q, verb, node, errors):  # a change begun is seen through, the run's end or not
        if time.monotonic() > deadline:
            raise Stalled(f"quorum-swap: the voters never showed {node} {verb}ed within "
                          f"{SETTLE_S:.0f} s ({tries} tries; {'; '.join(errors[-3:])})")
        time.sleep(2.0)
        try:
            tries += 1
            call(node)
        except ClusterError as exc:
            errors.append(first_line(exc))
    return {"tries": tries, "errors": errors[-3:],
            "disrupted": spec.disrupt if spec.disrupt == disrupt else "none"}


def _shows(q: QuorumControl, verb: str, node: int, errors: list[str]) -> bool:
    """Whether the voters show `node` added (or removed); False while the quorum cannot say."""
    try:
        return (node in q.status()[1]) == (verb == "add")
    except ClusterError as exc:
        errors.append(first_line(exc))
        return False


def _disrupt(ctx: Ctx, spec: FaultSpec, verb: str, node: int) -> None:
    """Kill the controller being removed, or cut the one being added off from every other node,
    for the line's `for`; then start it, or lift the cut."""
    if verb == "remove":
        break_node(ctx, "kill", node)
        try:
            ctx.hold(spec.for_)
        finally:
            ctx.cluster.start_nodes([node])
        return
    ctx.cluster.firewall.partition(isolate_grudge(ctx.cluster, [node]), ctx.owner)
    try:
        ctx.hold(spec.for_)
    finally:
        ctx.cluster.firewall.lift(ctx.owner)
