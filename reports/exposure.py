"""What a scenario's settings and faults expose its log to: truncation of acknowledged records,
and power loss before any replica fsynced them."""

from __future__ import annotations

from dataclasses import dataclass

from contracts.faultkinds import FAULT_KINDS
from contracts.faultlines import MIX, FaultSpec
from contracts.scenario import Scenario
from contracts.versions import eligible_leader_replicas
from reports.citations import ACKS, MIN_ISR, REPLICATION, UNCLEAN


@dataclass(frozen=True)
class Truncation:
    """Why an acknowledged write may be lost under these settings (empty: it may not), and the doc
    that says so."""

    reasons: tuple[str, ...]
    doc: str

    @property
    def why(self) -> str:
        return "; ".join(self.reasons)


def power_loss(fault: str) -> str:
    """What a fault kind does to unflushed data (contracts.faultkinds)."""
    return FAULT_KINDS[fault].power_loss


def fired(s: Scenario) -> list[FaultSpec]:
    """Each kind the scenario's lines fire, as a line of its own; a mix's kinds aimed at one broker,
    as every target a mix draws hits fewer brokers than the partition has replicas (MIX_TARGETS)."""
    return [f if f.fault != MIX else f.model_copy(update={"fault": kind, "target": "one"})
            for f in s.faults for kind in f.fired_kinds()]


def fsyncs_each_write(s: Scenario) -> bool:
    """Whether every replica fsyncs each record before it counts (flush.messages=1, or the
    broker-wide setting)."""
    flush = s.topic.config.get("flush.messages", s.kafka.config.get("log.flush.interval.messages"))
    return str(flush) == "1"


def power_loss_of_all(s: Scenario) -> str:
    """Why a power loss can take a record from every replica before any fsynced it ("" when none
    can)."""
    return next(iter(power_losses(s).values()), "")


def power_losses(s: Scenario) -> dict[str, str]:
    """Each fault of the scenario whose power loss can take a record from every replica, and why."""
    if fsyncs_each_write(s):
        return {}
    replicas, brokers = min(s.topic.replication_factor, s.kafka.brokers), s.kafka.brokers
    found: dict[str, str] = {}
    for f in fired(s):
        hit = {"all": brokers, "isr": replicas, "majority": brokers // 2 + 1}.get(str(f.target), 1)
        if power_loss(f.fault) == "targets" and (
                len(f.target) if isinstance(f.target, list) else hit) >= replicas:
            found[f.fault] = (f"{f.fault} of {f.target} with flush.messages unset (Kafka's "
                              "default: the OS decides when to fsync): every replica can lose a "
                              "record together, and the guarantee is 'predicated on at least one "
                              "replica remaining in sync'")
        last_replica = power_loss(f.fault).startswith("last-replica")
        if last_replica and not eligible_leader_replicas(s.kafka.version):
            found[f.fault] = ("the last in-sync replica loses power with flush.messages unset, and "
                              f"Kafka {s.kafka.version} has no eligible leader replicas (KIP-966, "
                              "on by default from 4.1): it is the only replica that may lead when "
                              "it returns, without what it had not fsynced ('predicated on at "
                              "least one replica remaining in sync')")
    return found


def elr_note(s: Scenario) -> str:
    """What keeps the last in-sync replica's power loss from losing a record on a release with
    KIP-966."""
    if eligible_leader_replicas(s.kafka.version) and any(
            power_loss(f.fault) == "last-replica" for f in fired(s)):
        return ("; KIP-966: when the last in-sync replica fails, a replica that left the ISR while "
                "it was below min.insync.replicas (so holds every committed record) is elected, "
                "and one that shut down uncleanly returns outside ISR and ELR")
    return ""


def log_rewrite(s: Scenario) -> Truncation:
    """What can remove records below the high watermark: an unclean election, or every replica
    losing power."""
    reasons = [*(["unclean.leader.election.enable=true: an out-of-sync replica may become leader"]
                 if s.topic.unclean_leader_election else []), *filter(None, [power_loss_of_all(s)])]
    return Truncation(tuple(reasons), UNCLEAN if s.topic.unclean_leader_election else REPLICATION)


def truncation(s: Scenario) -> Truncation:
    """acks 0/1, unclean elections and min.insync.replicas < 2 each let an acknowledged write exist
    on one replica; a power loss of every replica without fsync loses it from all."""
    p, t = s.producer, s.topic
    reasons = [*filter(None, [power_loss_of_all(s)])]
    if p.acks in ("0", "1"):
        reasons.append(f"acks={p.acks}: the leader answers before followers replicate; a leader "
                       "failure right after the answer loses the record")
    if t.unclean_leader_election:
        reasons.append("unclean.leader.election.enable=true: an out-of-sync replica may become "
                       "leader, 'even though doing so may result in data loss'")
    if min(t.min_insync_replicas, t.replication_factor) < 2:
        reasons.append(f"min.insync.replicas={t.min_insync_replicas} (replication factor "
                       f"{t.replication_factor}): an acknowledged write may exist on one replica "
                       "only")
    doc = (ACKS if p.acks in ("0", "1") else UNCLEAN if t.unclean_leader_election
           else MIN_ISR if min(t.min_insync_replicas, t.replication_factor) < 2 else REPLICATION)
    return Truncation(tuple(reasons), doc)
