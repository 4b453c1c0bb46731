"""The verdict: a run's analysis judged by the guarantee model (false beats unknown beats true),
what it could not establish, the expectations it missed, and the known bug or planted anomaly it
found."""

from __future__ import annotations

from dataclasses import dataclass, field

from contracts.scenario import Scenario, only_planted
from reports.analysis import Analysis
from reports.guarantees import allowed


@dataclass
class Verdict:
    """valid (True, False or None for unknown), what was forbidden or allowed and seen, why it is
    unknown, which expectations were missed, the known bug found again, and a proof's catch."""

    valid: bool | None
    forbidden: dict[str, int]
    allowed_seen: dict[str, int]
    missing_expect: list[str]
    unknown_because: list[str] = field(default_factory=list)
    known_bug: str = ""
    caught: bool = False


def _unknown_because(a: Analysis, loss_allowed: bool) -> list[str]:
    """What the run could not establish."""
    unknown = [] if a.metrics["acked"] else ["no send was acknowledged: the workload tested "
                                             "nothing"]
    if not a.facts.drain_ran:
        unknown.append("the final drain never ran (run interrupted?); values read without a send "
                       "row are not judged")
    elif not a.facts.drain_complete:
        names = ", ".join(a.facts.partitions_not_drained)
        unknown.append(f"no complete drain of partition {names}: a value missing there is not "
                       "proven lost"
                       + (", and a poll-skip there is judged only between records the drain read"
                          if a.facts.transactional else ""))
    unseen = a.counts().get("unseen")
    if unseen and not loss_allowed:
        unknown.append(f"{unseen} acknowledged sends neither read nor provably lost: a loss is "
                       "proven by a complete drain with a replica dump, or by an assign-mode "
                       "reader past the offset")
    if a.facts.group_commits == "unknown":
        unknown.append("the consumer group's committed offsets could not be read")
    if a.facts.copy_commits == "unknown":
        unknown.append("the eos-copy group's final committed offsets could not be read, so "
                       "eos-loss is not judged")
    if a.facts.copy_behind:
        unknown.append("the eos-copy stage never caught up with the input on partitions "
                       f"{a.facts.copy_behind}: what it did not commit is not judged")
    if a.facts.share_state != "none" and not a.facts.share_live:
        unknown.append("no share group member was handed a record while the faults ran: the "
                       "final share consumer alone read the topic, so the faults tested nothing "
                       "of the group")
    if a.facts.share_state == "known" and a.facts.share_lag and not a.facts.share_final:
        unknown.append(f"the share group was left with a lag of {a.facts.share_lag} records and no "
                       "final share consumer was handed one, so share-stuck is not judged: a "
                       "stuck group and a consumer never assigned look alike")
    if a.facts.share_state == "unknown":
        unknown.append("the share group's final state could not be read, so share-lost, "
                       "share-stuck and share-delivery-limit are not judged")
    if not a.facts.replicas_dumped:
        unknown.append("no replica dump: a value no reader saw is not proven absent from every "
                       "replica")
    return unknown + [f"the chaos did not happen as planned: {p}" for p in a.facts.chaos_problems]


def verdict(s: Scenario, a: Analysis) -> Verdict:
    """false beats unknown beats true; allowed anomalies are counted but never fail a run. On the
    release a known bug affects, the bug is expected: its anomalies, and no others, are the bug
    found again. A checker's proof plants the forbidden anomalies it expects: they, and no others,
    are caught."""
    ok = allowed(s)
    counts = a.counts()
    forbidden = {k: n for k, n in counts.items() if n and k not in ok}
    seen_ok = {k: n for k, n in counts.items() if n and k in ok and k != "unseen"}
    unknown = _unknown_because(a, "lost-write" in ok) + [
        f"the scenario exists to provoke {event} and the run showed none" for event in s.provokes
        if event not in a.facts.observed]
    missing = [e for e in s.expect if not counts.get(e)]
    bug = s.bug_expected
    if bug and not any(forbidden.get(e) for e in bug.shows):
        missing.append(" or ".join(bug.shows) + f" ({bug.bug})")
    found = bug.bug if bug and forbidden and set(forbidden) <= set(bug.shows) else ""
    valid = False if forbidden else (None if unknown else True)
    return Verdict(valid, forbidden, seen_ok, missing, unknown, found,
                   only_planted(s.proof, set(forbidden), s.expect, ok))
