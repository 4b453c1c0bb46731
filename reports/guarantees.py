"""Kafka's documented guarantees as data: one rule per anomaly saying whether a scenario's settings
permit it, why, and the documentation it rests on (reports.verdict judges a run by them)."""

from __future__ import annotations

from collections.abc import Callable

from contracts.anomalies import ANOMALIES
from contracts.clients import java_release
from contracts.results import Rule
from contracts.scenario import Scenario
from contracts.versions import KIP_101, KIP_966, release, replica_fencing, transaction_defense
from reports.citations import (
    CONSUMER,
    IDEMPOTENCE,
    IN_FLIGHT,
    ISOLATION,
    KIP_98,
    KIP_211,
    KIP_360,
    KIP_447,
    KIP_866,
    KIP_932,
    LIBRDKAFKA_TIMEOUTS,
    MIN_ISR,
    REPLICATION,
    RETENTION,
    RETRIES,
    SEMANTICS,
    SHARE_CONSUMER,
    SHARE_LIMIT,
    TRANSACTIONS,
    UNCLEAN,
)
from reports.exposure import elr_note, fired, log_rewrite, power_loss, power_losses, truncation

RuleFn = Callable[[Scenario], Rule]
RULES: dict[str, RuleFn] = {}


def rule(anomaly: str) -> Callable[[RuleFn], RuleFn]:
    """Register the rule of one anomaly (a name contracts.anomalies lists), the one way every rule
    is registered."""
    if anomaly not in ANOMALIES:
        raise ImportError(f"no anomaly {anomaly!r} in contracts.anomalies")

    def register(fn: RuleFn) -> RuleFn:
        RULES[anomaly] = fn
        return fn
    return register


@rule("unseen")
def _unseen(_s: Scenario) -> Rule:
    return Rule("unseen", True, "not an anomaly of Kafka: the final read did not reach the end "
                                "(verdict unknown)",
                SEMANTICS)


@rule("retention-breach")
def _retention_breach(_s: Scenario) -> Rule:
    return Rule("retention-breach", False, "retention discards a partition's oldest segment only "
                                           "when what would remain is still retention.bytes or "
                                           "more, or once its newest record is older than "
                                           "retention.ms; the remote tier keeps the same "
                                           "retention (KIP-405)", RETENTION)


@rule("timeout-duplicate")
def _timeout_duplicate(_s: Scenario) -> Rule:
    return Rule("timeout-duplicate", True, "a message of the same producer timed out "
                                           "(message.timeout.ms) while this one awaited its ack: "
                                           "librdkafka drains, bumps the producer epoch and "
                                           "re-sends what was unacknowledged under the new epoch, "
                                           "where the broker cannot recognise a copy written "
                                           "before; its maintainers: only transactions keep "
                                           "exactly-once across message timeouts "
                                           "(confluentinc/librdkafka#4953)", LIBRDKAFKA_TIMEOUTS)


@rule("epoch-duplicate")
def _epoch_duplicate(_s: Scenario) -> Rule:
    return Rule("epoch-duplicate", True, "after an out-of-order sequence or an unknown producer id "
                                         "an idempotent producer bumps its epoch and numbers its "
                                         "sequences from zero (KIP-360); a value it re-sends then, "
                                         "written before but never acknowledged, is a new record "
                                         "to the broker (confluentinc/librdkafka#4953)", KIP_360)


@rule("precommitted-read")
def _precommitted_read(_s: Scenario) -> Rule:
    return Rule("precommitted-read", False, "a read_committed consumer reads a transaction's "
                                            "messages only once it has committed (isolation.level; "
                                            "KIP-98's last stable offset), and a commit is only "
                                            "ever the producer's request", ISOLATION)


@rule("unexpected")
def _unexpected(_s: Scenario) -> Rule:
    return Rule("unexpected", False, "consumers only read what producers wrote, intact "
                                     "(CRC-checked batches)",
                SEMANTICS)


def fencing_note(s: Scenario) -> str:
    """What the scenario's Kafka version lacks of the replication fixes (KIP-101/279/320), said
    after a forbidden rule ("" from 2.1, which has them all): the guarantee is documented for every
    version."""
    if release(s.kafka.version) >= (2, 1):
        return ""
    words, _ = replica_fencing(s.kafka.version)
    return (f"; {words}: a violation is still a bug (the guarantee is documented), perhaps one "
            "fixed since")


def _loss(anomaly: str, s: Scenario, why_safe: str, doc_safe: str) -> Rule:
    """A loss is allowed where truncation is (its reasons and doc), else forbidden for
    `why_safe`."""
    loss = truncation(s)
    return Rule(anomaly, bool(loss.reasons), loss.why or why_safe,
                loss.doc if loss.reasons else doc_safe)


@rule("lost-write")
def _lost_write(s: Scenario) -> Rule:
    return _loss("lost-write", s, "acks=all with min.insync.replicas>=2 and clean elections: an "
                                  "acknowledged write is on at least min.insync.replicas replicas "
                                  "and survives any failure of fewer" + fencing_note(s)
                 + elr_note(s), KIP_966 if elr_note(s) else MIN_ISR)


@rule("aborted-read")
def _aborted_read(s: Scenario) -> Rule:
    why = ("a send that produce() refused was never written, and a read_committed consumer 'will "
           "only return transactional messages which have been committed' (isolation.level)")
    if s.producer.transactional:
        java = java_release(s.producer.client, s.kafka.version)
        why += f"; on Kafka {s.kafka.version}: {transaction_defense(s.kafka.version, java)}"
    return Rule("aborted-read", False, why, ISOLATION)


@rule("lost-committed")
def _lost_committed(s: Scenario) -> Rule:
    return _loss("lost-committed", s, "a committed transaction's messages are acknowledged writes "
                                      "(acks=all) under clean elections; commit_transaction "
                                      "returns only once they are", KIP_98)


@rule("torn-transaction")
def _torn_transaction(s: Scenario) -> Rule:
    loss = truncation(s)
    if loss.reasons:
        return Rule("torn-transaction", True, "a truncated log can lose part of a transaction "
                                              f"({loss.why})",
                    loss.doc)
    return Rule("torn-transaction", False, "a transaction writes to several partitions atomically: "
                                           "a read_committed consumer sees all of a committed "
                                           "transaction or none of it", TRANSACTIONS)


@rule("duplicate")
def _duplicate(s: Scenario) -> Rule:
    p = s.producer
    if p.idempotence:
        why = ("enable.idempotence=true: the broker de-duplicates retries by producer id and "
               "sequence")
    elif p.may_rewrite:
        why = (f"enable.idempotence=false with retries={p.retries}: a retried batch whose first "
               "attempt was written is written again")
    else:
        why = ("enable.idempotence=false with retries=0: each batch is sent once, so no record is "
               "written twice")
    return Rule("duplicate", p.may_rewrite, why,
                IDEMPOTENCE if p.idempotence or p.may_rewrite else RETRIES)


@rule("inconsistent-offset")
def _inconsistent_offset(s: Scenario) -> Rule:
    loss = truncation(s)
    if loss.reasons:
        return Rule("inconsistent-offset", True,
                    "a truncated log hands acknowledged offsets to new records "
                    f"({loss.why})", loss.doc)
    return Rule("inconsistent-offset", False, "committed offsets are never rewritten without data "
                                              "loss"
                + fencing_note(s), REPLICATION)


@rule("nonmonotonic-send")
def _nonmonotonic_send(s: Scenario) -> Rule:
    p, loss = s.producer, truncation(s)
    reorder = p.may_rewrite and p.max_in_flight > 1
    why = [*(["retries with max.in.flight.requests.per.connection>1 and no idempotence may reorder "
              "batches"]
             if reorder else []),
           *([f"truncation reuses offsets ({loss.why})"] if loss.reasons else [])]
    doc = IN_FLIGHT if reorder else (loss.doc if loss.reasons else IDEMPOTENCE)
    return Rule("nonmonotonic-send", bool(why),
                "; ".join(why) or "idempotent (or single in-flight) producer: per-partition order "
                                  "is kept", doc)


@rule("poll-skip")
def _poll_skip(s: Scenario) -> Rule:
    rewrite = log_rewrite(s)
    return Rule("poll-skip", bool(rewrite.reasons), "a truncated log can move a consumer's "
                                                    f"position ({rewrite.why})"
                if rewrite.reasons else "a consumer's position advances one record at a time "
                                        "within an assignment",
                rewrite.doc if rewrite.reasons else SEMANTICS)


@rule("nonmonotonic-poll")
def _nonmonotonic_poll(s: Scenario) -> Rule:
    rewrite = log_rewrite(s)
    return Rule("nonmonotonic-poll", bool(rewrite.reasons),
                f"a truncated log can reset a consumer's position "
                f"({rewrite.why})" if rewrite.reasons
                else "a consumer's position never goes back within an "
                "assignment", rewrite.doc if rewrite.reasons else SEMANTICS)


@rule("vanished-read")
def _vanished_read(s: Scenario) -> Rule:
    rewrite = log_rewrite(s)
    return Rule("vanished-read", bool(rewrite.reasons),
                "consumers read below the high watermark, and only this can remove such a record: "
                f"{rewrite.why}"
                if rewrite.reasons else "consumers only see records below the high watermark, "
                                        "which every ISR member has", rewrite.doc)


@rule("replica-divergence")
def _replica_divergence(s: Scenario) -> Rule:
    if s.topic.unclean_leader_election:
        return Rule("replica-divergence", True, "an unclean leader's log wins over replicas that "
                                                "hold other records",
                    UNCLEAN)
    if power := "; ".join(why for fault, why in power_losses(s).items()
                          if power_loss(fault) != "last-replica-others-crash"):
        return Rule("replica-divergence", True, "replicas that lost different "
                                                "unsynced tails may each keep "
                                                f"records the others lost ({power})", REPLICATION)
    words, kip = replica_fencing(s.kafka.version)
    if any(power_loss(f.fault) == "last-replica-others-crash" for f in fired(s)):
        return Rule("replica-divergence", False, "replicas that return after their leader lost "
                    "power follow the log it returned with, whatever it lost (KIP-101's second "
                    "scenario)" + (fencing_note(s) or f"; {words}"), KIP_101)
    if fencing_note(s):
        return Rule("replica-divergence", False, "below the high watermark replicas agree; "
                                                 f"{words}: a divergence is still a bug, perhaps "
                                                 "one fixed since", kip)
    return Rule("replica-divergence", False, f"{words}; below the high watermark "
                                             "replicas agree", REPLICATION)


@rule("committed-unread")
def _committed_unread(s: Scenario) -> Rule:
    loss = truncation(s)
    if s.consumer.mode == "subscribe" and s.consumer.commit == "before":
        return Rule("committed-unread", True, "consumer.commit=before: the position is committed "
                                              "before processing, so a crash in between loses the "
                                              "batch ('at-most-once')", SEMANTICS)
    if loss.reasons:
        return Rule("committed-unread", True,
                    "a truncated log puts other records under the group's committed offsets "
                    f"({loss.why})", loss.doc)
    if s.consumer.reset == "latest":
        return Rule("committed-unread", False, "members commit only after processing, and a "
                                               "group's committed offsets are kept while it has "
                                               "members and for offsets.retention.minutes after it "
                                               "empties (KIP-211, 2.1), so a member that rejoins "
                                               "resumes from them, never from the end of the log",
                    KIP_211)
    return Rule("committed-unread", False, "a group member stores or commits a position only after "
                                           "processing the records before it: at-least-once "
                                           "delivery across rebalances and crashes", CONSUMER)


EOS = {"eos-duplicate": "an aborted transaction's copies are never read_committed and a committed "
                        "one moved the input offsets past its records, so no input record is "
                        "copied twice",
       "eos-loss": "the input offsets move only when the transaction holding the records' copies "
                   "commits, so no committed input offset passes a record without its copy"}


def _eos(anomaly: str, s: Scenario) -> Rule:
    """The eos-copy stage's promise: output and input offsets commit atomically
    (send_offsets_to_transaction, read_committed), unless the stage commits its offsets outside the
    transaction or the input log is truncated."""
    loss = truncation(s)
    if s.workload != "eos-copy":
        return Rule(anomaly, False, "the run has no eos-copy stage", KIP_447)
    if s.copier.offsets == "outside":
        return Rule(anomaly, True, "copier.offsets=outside: the stage commits its "
                                   "input offsets with consumer.commit before its "
                                   "transaction ends, so an abort or a crash in "
                                   "between loses the batch's copies (at-most-once)", SEMANTICS)
    if loss.reasons:
        return Rule(anomaly, True, "a truncated input log reuses offsets the stage already copied "
                                   f"or committed ({loss.why})", loss.doc)
    fencing = ("" if release(s.kafka.version) >= (2, 5)
               else "; before Kafka 2.5 (KIP-447) a zombie instance is "
               "fenced by its transactional.id only")
    return Rule(anomaly, False, f"exactly-once consume-transform-produce: {EOS[anomaly]} (KIP-98, "
                                f"KIP-447){fencing}",
                KIP_447)


@rule("eos-duplicate")
def _eos_duplicate(s: Scenario) -> Rule:
    return _eos("eos-duplicate", s)


@rule("eos-loss")
def _eos_loss(s: Scenario) -> Rule:
    return _eos("eos-loss", s)


@rule("share-lost")
def _share_lost(s: Scenario) -> Rule:
    loss = truncation(s)
    if s.share.accept == "before":
        return Rule("share-lost", True, "share.accept=before: a member accepts records before it "
                                        "processes them, so a crash in between loses them "
                                        "(at-most-once)", SHARE_CONSUMER)
    if loss.reasons:
        return Rule("share-lost", True, f"the log itself may lose acknowledged records "
                                        f"({loss.why})", loss.doc)
    return Rule("share-lost", False, "a share group delivers each record until a member accepts "
                                     "or rejects it or its delivery count reaches the limit: a "
                                     "record whose member crashed or let its lock expire is "
                                     "delivered again (at-least-once, KIP-932)", KIP_932)


@rule("share-stuck")
def _share_stuck(_s: Scenario) -> Rule:
    return Rule("share-stuck", False, "an acquisition lock expires after "
                                      "group.share.record.lock.duration.ms and a member that "
                                      "leaves releases its records, so a member that keeps "
                                      "fetching gets every record still to deliver (KIP-932)",
                KIP_932)


@rule("share-redelivered-after-accept")
def _share_redelivered(_s: Scenario) -> Rule:
    return Rule("share-redelivered-after-accept", False,
                "an accepted record's delivery is complete: the share-partition never hands it "
                "out again (KIP-932)", KIP_932)


@rule("share-concurrent")
def _share_concurrent(_s: Scenario) -> Rule:
    return Rule("share-concurrent", False, "a record is acquired by one member at a time; an "
                                           "acknowledgement from a member whose acquisition ended "
                                           "(its lock expired, the record went to another) fails "
                                           "(KIP-932)", KIP_932)


@rule("share-delivery-limit")
def _share_delivery_limit(s: Scenario) -> Rule:
    return Rule("share-delivery-limit", False,
                f"a record is archived once it has been delivered "
                f"group.share.delivery.count.limit={s.share.delivery_limit} times", SHARE_LIMIT)


@rule("metadata-lost")
def _metadata_lost(_s: Scenario) -> Rule:
    return Rule("metadata-lost", False, "the migration copies every topic, partition assignment, "
                                        "topic config and SCRAM credential from ZooKeeper to the "
                                        "KRaft quorum, which serves them from then on (KIP-866)",
                KIP_866)


if set(RULES) != set(ANOMALIES):
    raise ImportError(f"rules and contracts.anomalies differ: {set(RULES) ^ set(ANOMALIES)}")


def rules(s: Scenario) -> list[Rule]:
    """The guarantee model: every anomaly's rule under the scenario's settings, in the checkers'
    order."""
    return [RULES[name](s) for name in ANOMALIES]


def allowed(s: Scenario) -> set[str]:
    """The anomalies Kafka's documentation permits under the scenario's settings."""
    return {r.anomaly for r in rules(s) if r.allowed}
