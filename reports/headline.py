"""The one sentence at the top of a report (and of a CI failure) that says what happened."""

from __future__ import annotations

from contracts.anomalies import BY_NAME
from contracts.results import RunResult, plan_share


def _during(first_s: float, last_s: float, faults: list[dict]) -> str:
    """' during kill #2 of broker 3' for the first fault op that ran within [first_s, last_s], ' and 2 more fault
    ops' when others did too."""
    seen: dict[str, int] = {}
    hits = []
    for f in faults:
        if f["start_s"] is None or f["fault"] == "heal":
            continue
        seen[f["fault"]] = seen.get(f["fault"], 0) + 1
        if f["start_s"] <= last_s and first_s <= f["start_s"] + f["length_s"]:
            hits.append(f"{f['fault']} #{seen[f['fault']]} of broker {f['targets']}")
    more = len(hits) - 1
    return f" during {hits[0]}{f' and {more} more fault op' + 's' * (more > 1) if more else ''}" if hits else ""


def _anomaly(r: RunResult, name: str, faults: list[dict]) -> str:
    """'Lost 31,350 of 345,658 acknowledged writes (9.1%) on partition 0, acknowledged at 22.9-23.4 s during ...'"""
    n = r.counts[name]
    acked = r.metrics.acked if r.metrics else 0
    if name == "lost-write" and acked:
        text = f"Lost {n:,} of {acked:,} acknowledged writes ({100 * n / acked:.1f}%)"
    else:
        text = f"{n:,} {BY_NAME[name].phrase}"
    span = r.spans.get(name)
    if span is not None:
        where = ", ".join(map(str, span.partitions))
        text += (f" on partition{'s' if len(span.partitions) > 1 else ''} {where}, acknowledged at "
                 f"{span.first_s:.1f}-{span.last_s:.1f} s{_during(span.first_s, span.last_s, faults)}")
    return text


def _first(r: RunResult, seen: dict[str, int]) -> str:
    """The anomaly a headline leads with: the first in the checkers' order (lost writes before anything else), not
    the most numerous."""
    return next(name for name in r.counts if name in seen)


def headline(r: RunResult, faults: list[dict]) -> tuple[str, str]:
    """(what happened, then how much of the planned chaos did; the documentation it cites or ""). `faults` (a
    report's fault rows) say during which op."""
    if r.error:
        return f"The harness could not complete the run: {r.error}.", ""
    sentence, doc = _verdict(r, faults)
    chaos = plan_share(r.facts)
    return (f"{sentence} {chaos[0].upper()}{chaos[1:]}." if chaos else sentence), doc


def _verdict(r: RunResult, faults: list[dict]) -> tuple[str, str]:
    """The sentence of the run's badge, and the documentation it cites."""
    why = {rule.anomaly: rule for rule in r.rules}
    if r.forbidden:
        name = _first(r, r.forbidden)
        bug = (r.settings or {}).get("regression") or {}
        if r.known_bug:
            return (f"{_anomaly(r, name, faults)}: {r.known_bug} found again (Kafka {r.kafka} has it, "
                    f"{bug['fixed']} fixed it); forbidden: {why[name].why}.", bug["link"])
        return f"{_anomaly(r, name, faults)}; forbidden: {why[name].why}.", why[name].doc
    if r.verdict is None:
        more = f" (and {len(r.unknown_because) - 1} more)" if len(r.unknown_because) > 1 else ""
        return f"Unknown: {r.unknown_because[0]}{more}.", ""
    if r.missing_expect:
        return (f"Not provoked: expected {', '.join(r.missing_expect)} but saw none, so the run did not show what "
                "this scenario exists to show.", "")
    if r.allowed_seen:
        name = _first(r, r.allowed_seen)
        return f"{_anomaly(r, name, faults)}; allowed by {why[name].why}.", why[name].doc
    acked = r.metrics.acked if r.metrics else 0
    return f"All {acked:,} acknowledged writes were read back and no anomaly occurred.", ""
