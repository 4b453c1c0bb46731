"""The headline at the top of a report (and of a CI failure): at most 30 words saying what happened
and how much of the planned chaos did; the rule behind it follows on a line of its own."""

from __future__ import annotations

from contracts.anomalies import BY_NAME
from contracts.results import Facts, RunResult

WORDS = 30  # a headline's most


def _during(first_s: float, last_s: float, faults: list[dict]) -> str:
    """', during kill #2 of broker 3' for the first fault op that ran within [first_s, last_s] (an
    op that picks its own brokers names none), ' (+2 more ops)' when others did too."""
    seen: dict[str, int] = {}
    hits = []
    for f in faults:
        if f["start_s"] is None or f["fault"] == "heal":
            continue
        seen[f["fault"]] = seen.get(f["fault"], 0) + 1
        if f["start_s"] <= last_s and first_s <= f["start_s"] + f["length_s"]:
            brokers = f" of broker {f['targets']}" if f["targets"] else ""
            hits.append(f"{f['fault']} #{seen[f['fault']]}{brokers}")
    more = f" (+{len(hits) - 1} more op{'s' * (len(hits) > 2)})" if len(hits) > 1 else ""
    return f", during {hits[0]}{more}" if hits else ""


def _anomaly(r: RunResult, name: str, faults: list[dict]) -> str:
    """'Lost 31,350 of 345,658 acknowledged writes (9.1%) on partition 0 at 22.9-23.4 s, during kill
    #1 ...'"""
    n = r.counts[name]
    acked = r.metrics.acked if r.metrics else 0
    if name == "lost-write" and acked:
        text = f"Lost {n:,} of {acked:,} acknowledged writes ({100 * n / acked:.1f}%)"
    else:
        text = BY_NAME[name].counted(n)
    span = r.spans.get(name)
    if span is not None:
        where = (f"partition {span.partitions[0]}" if len(span.partitions) == 1
                 else f"{len(span.partitions)} partitions")
        during = _during(span.first_s, span.last_s, faults)
        text += f" on {where} at {span.first_s:.1f}-{span.last_s:.1f} s{during}"
    return text


def _capped(text: str, words: int) -> str:
    """`text`, cut to its first `words` words (with an ellipsis when cut)."""
    split = text.split()
    return " ".join(split[:words]) + (" …" if len(split) > words else "")


def _first(r: RunResult, seen: dict[str, int]) -> str:
    """The anomaly a headline leads with: the first in the checkers' order (lost writes before
    anything else), not the most numerous."""
    return next(name for name in r.counts if name in seen)


def ops_fired(facts: Facts | None) -> str:
    """' 8/10 planned fault ops fired, 1 late.' ("" without planned ops)."""
    planned = sum(facts.ops.values()) if facts else 0
    if not planned:
        return ""
    late = f", {facts.late_ops} late" if facts.late_ops else ""
    return f" {facts.ops.get('fired', 0)}/{planned} planned fault ops fired{late}."


def headline(r: RunResult, faults: list[dict]) -> tuple[str, str]:
    """(what happened and how much of the planned chaos did, in at most WORDS words; the
    documentation of the rule behind it, or ""). `faults` (a report's fault rows) say during which
    op."""
    if r.error:
        return f"The harness could not complete the run: {_capped(r.error, WORDS - 8)}.", ""
    sentence, doc = _verdict(r, faults)
    return sentence + ops_fired(r.facts), doc


def _verdict(r: RunResult, faults: list[dict]) -> tuple[str, str]:
    """The sentence of the run's badge, and the documentation of its rule."""
    docs = {rule.anomaly: rule.doc for rule in r.rules}
    if r.forbidden:
        name = _first(r, r.forbidden)
        if r.known_bug:
            bug = (r.settings or {}).get("regression") or {}
            return (f"{_anomaly(r, name, faults)}: {r.known_bug} found again (Kafka {r.kafka} has "
                    f"it, {bug['fixed']} fixed it).", bug["link"])
        return f"{_anomaly(r, name, faults)}; {'caught' if r.caught else 'forbidden'}.", docs[name]
    if r.verdict is None and r.liveness:
        return f"Unknown, as the cluster stalled: {_capped(r.liveness, 16)}.", ""
    if r.verdict is None:
        more = (f" (and {len(r.unknown_because) - 1} more reasons)" if len(r.unknown_because) > 1
                else "")
        return f"Unknown: {_capped(r.unknown_because[0].split(': ')[0], 14)}{more}.", ""
    if r.missing_expect:
        return f"Not provoked: expected {', '.join(r.missing_expect)} but saw none.", ""
    if r.allowed_seen:
        name = _first(r, r.allowed_seen)
        return f"{_anomaly(r, name, faults)}; allowed.", docs[name]
    acked = r.metrics.acked if r.metrics else 0
    share = f" {r.metrics.share.brief()}." if r.metrics and r.metrics.share else ""
    return f"All {acked:,} acknowledged writes were read back and no anomaly occurred.{share}", ""


def rule(r: RunResult) -> str:
    """Why the headline's anomaly is forbidden or allowed under the run's settings ("" when it names
    none)."""
    seen = r.forbidden or ({} if r.verdict is None or r.missing_expect else r.allowed_seen)
    if r.error or not seen:
        return ""
    name = _first(r, seen)
    return next((f"{name} is {'allowed' if x.allowed else 'forbidden'} here: "
                 f"{x.why}." for x in r.rules
                 if x.anomaly == name), "")
