"""Kafka's documented guarantees as data: which anomalies a scenario's settings permit, and the verdict."""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.scenario import ANOMALIES, Scenario
from reports.analysis import Analysis

DOCS = "https://kafka.apache.org/documentation/"
ACKS = DOCS + "#producerconfigs_acks"
MIN_ISR = DOCS + "#topicconfigs_min.insync.replicas"
UNCLEAN = DOCS + "#topicconfigs_unclean.leader.election.enable"
IDEMPOTENCE = DOCS + "#producerconfigs_enable.idempotence"
IN_FLIGHT = DOCS + "#producerconfigs_max.in.flight.requests.per.connection"
REPLICATION = DOCS + "#replication"
SEMANTICS = DOCS + "#semantics"
CONSUMER = DOCS + "#consumerconfigs_enable.auto.commit"
# The client's own documentation, for what librdkafka (confluent-kafka's core) does when a message times out.
LIBRDKAFKA_TIMEOUTS = ("https://github.com/confluentinc/librdkafka/blob/master/INTRODUCTION.md"
                       "#message-timeout-considerations")


@dataclass(frozen=True)
class Rule:
    """One anomaly's status under a scenario's settings, and the documentation it rests on."""

    anomaly: str
    allowed: bool
    why: str
    doc: str


def rules(s: Scenario) -> list[Rule]:
    """The guarantee model. Every anomaly gets a rule, allowed or not, with the reason and its source."""
    p, t = s.producer, s.topic
    loss_reasons = []
    if p.acks in ("0", "1"):
        loss_reasons.append(f"acks={p.acks}: the leader answers before followers replicate; a leader failure "
                            "right after the answer loses the record")
    if t.unclean_leader_election:
        loss_reasons.append("unclean.leader.election.enable=true: an out-of-sync replica may become leader, "
                            "'even though doing so may result in data loss'")
    if min(t.min_insync_replicas, t.replication_factor) < 2:
        loss_reasons.append(f"min.insync.replicas={t.min_insync_replicas} (replication factor "
                            f"{t.replication_factor}): an acknowledged write may exist on one replica only")
    loss = bool(loss_reasons)
    loss_doc = ACKS if p.acks in ("0", "1") else (UNCLEAN if t.unclean_leader_election else MIN_ISR)
    truncation = "; ".join(loss_reasons)
    reorder = not p.idempotence and p.retries > 0 and p.max_in_flight > 1
    unclean = t.unclean_leader_election
    at_most_once = s.consumer.mode == "subscribe" and s.consumer.commit == "before"
    out = [
        Rule("lost-write", loss, truncation or "acks=all with min.insync.replicas>=2 and clean elections: an "
             "acknowledged write is on at least min.insync.replicas replicas and survives any failure of fewer",
             loss_doc if loss else MIN_ISR),
        Rule("unseen", True, "not an anomaly of Kafka: the final read did not reach the end (verdict unknown)",
             SEMANTICS),
        Rule("duplicate", not p.idempotence,
             "enable.idempotence=true: the broker de-duplicates retries by producer id and sequence" if p.idempotence
             else "enable.idempotence=false: a retried batch whose first attempt was written is written again",
             IDEMPOTENCE),
        Rule("timeout-duplicate", True,
             "a message of the same producer timed out (message.timeout.ms) while this one awaited its ack: "
             "librdkafka drains, bumps the producer epoch and re-sends what was unacknowledged under the new "
             "epoch, where the broker cannot recognise a copy written before; its maintainers: only transactions "
             "keep exactly-once across message timeouts (confluentinc/librdkafka#4953)", LIBRDKAFKA_TIMEOUTS),
        Rule("nonmonotonic-send", reorder or loss,
             ("retries with max.in.flight.requests.per.connection>1 and no idempotence may reorder batches"
              if reorder else "") + ("; " if reorder and loss else "")
             + (f"truncation reuses offsets ({truncation})" if loss else "")
             or "idempotent (or single in-flight) producer: per-partition order is kept",
             IN_FLIGHT if reorder else (loss_doc if loss else IDEMPOTENCE)),
        Rule("inconsistent-offset", loss,
             f"a truncated log hands acknowledged offsets to new records ({truncation})" if loss
             else "committed offsets are never rewritten without data loss", loss_doc if loss else REPLICATION),
        Rule("replica-divergence", unclean,
             "an unclean leader's log wins over replicas that hold other records" if unclean
             else "leader epochs (KIP-101) truncate followers to the leader's log; below the high watermark "
                  "replicas agree", UNCLEAN if unclean else REPLICATION),
        Rule("vanished-read", unclean,
             "consumers read below the high watermark; only an unclean election can remove such a record" if unclean
             else "consumers only see records below the high watermark, which every ISR member has", REPLICATION),
        Rule("poll-skip", unclean, "a truncated log can move a consumer's position" if unclean
             else "a consumer's position advances one record at a time within an assignment", SEMANTICS),
        Rule("nonmonotonic-poll", unclean, "a truncated log can reset a consumer's position" if unclean
             else "a consumer's position never goes back within an assignment", SEMANTICS),
        Rule("committed-unread", loss or at_most_once,
             "consumer.commit=before: the position is committed before processing, so a crash in between "
             "loses the batch ('at-most-once')" if at_most_once else
             f"a truncated log puts other records under the group's committed offsets ({truncation})" if loss
             else "a group member stores or commits a position only after processing the records before it: "
                  "at-least-once delivery across rebalances and crashes",
             SEMANTICS if at_most_once else loss_doc if loss else CONSUMER),
        Rule("aborted-read", False, "a send that produce() refused was never written", SEMANTICS),
        Rule("unexpected", False, "consumers only read what producers wrote, intact (CRC-checked batches)",
             SEMANTICS),
    ]
    assert {r.anomaly for r in out} == set(ANOMALIES)
    return out


def allowed(s: Scenario) -> set[str]:
    """The anomalies Kafka's documentation permits under the scenario's settings."""
    return {r.anomaly for r in rules(s) if r.allowed}


@dataclass
class Verdict:
    valid: str  # "true" | "false" | "unknown"
    forbidden: dict[str, int]
    allowed_seen: dict[str, int]
    missing_expect: list[str]
    unknown_because: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        """What CI fails on: a guarantee violated, or an expected anomaly the harness did not provoke."""
        return self.valid == "false" or bool(self.missing_expect)


def verdict(s: Scenario, a: Analysis) -> Verdict:
    """false beats unknown beats true; allowed anomalies are counted but never fail a run."""
    ok = allowed(s)
    counts = a.counts()
    forbidden = {k: n for k, n in counts.items() if n and k not in ok}
    seen_ok = {k: n for k, n in counts.items() if n and k in ok and k != "unseen"}
    unknown = []
    if not a.facts.drain_ran:
        unknown.append("the final drain never ran (run interrupted?); values read without a send row are not judged")
    elif not a.facts.drain_complete:
        unknown.append(f"the final drain did not reach the end of partitions {a.facts.partitions_not_drained}")
    if counts.get("unseen") and "lost-write" not in ok:
        unknown.append(f"{counts['unseen']} acknowledged sends neither read nor provably lost")
    if a.facts.group_commits == "unknown":
        unknown.append("the consumer group's committed offsets could not be read")
    if not a.facts.replicas_dumped:
        unknown.append("replica logs were not dumped")
    missing = [e for e in s.expect if not counts.get(e)]
    valid = "false" if forbidden else ("unknown" if unknown else "true")
    return Verdict(valid, forbidden, seen_ok, missing, unknown)
