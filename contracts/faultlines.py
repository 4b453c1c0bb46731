"""A scenario's fault lines: which kind fires at what target and when, and the random mix that picks
a kind and a target per op from the seed."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from contracts.faultkinds import FAULT_KINDS
from contracts.fields import FAULT_PARAMS, Seconds, one_of
from contracts.versions import (
    DYNAMIC_QUORUM_FROM,
    VERSION_RE,
    migration_problem,
    release,
    upgrade_problem,
)

COUNTED = ("one", "all", "minority", "majority")  # targets that name members by how many
# txn-coordinator: the leader of producer 0's __transaction_state partition; group-coordinator: of
# the consumer group's __consumer_offsets partition; share-coordinator: of the __share_group_state
# partition that holds a share-partition's state (a partition of the topic, drawn per op)
COORDINATORS = ("txn-coordinator", "group-coordinator", "share-coordinator")
# a broker's listeners a latency or hold-requests fault can act on: the clients', the inter-broker
# one (replica fetches, transaction markers, share-state RPCs), the controllers', and on tiered
# clusters the listener that only the remote-log-metadata producer uses
Link = Literal["clients", "replication", "controller", "remote-metadata"]
# hold-requests: which way it holds a listener's traffic: what arrives, or what it answers
Direction = Literal["request", "response"]
# hold-requests: what befalls what it holds: let through `latency_ms` after it came, held until the
# op ends, dropped (and the rest of its connection) until the op ends, sent on as a TCP reset (so
# both ends drop the connection), or (answers only) let through at once with every error code set
# to `error`, though the broker did the work
Action = Literal["delay", "hold", "drop", "reset", "error"]
# hold-requests with action error: the Kafka error codes it can answer with (Kafka's Errors)
ERROR_CODES = {"UNKNOWN_SERVER_ERROR": -1, "UNKNOWN_TOPIC_OR_PARTITION": 3,
               "LEADER_NOT_AVAILABLE": 5, "NOT_LEADER_OR_FOLLOWER": 6, "REQUEST_TIMED_OUT": 7,
               "NETWORK_EXCEPTION": 13, "COORDINATOR_LOAD_IN_PROGRESS": 14,
               "COORDINATOR_NOT_AVAILABLE": 15, "NOT_COORDINATOR": 16, "NOT_ENOUGH_REPLICAS": 19,
               "NOT_ENOUGH_REPLICAS_AFTER_APPEND": 20, "REBALANCE_IN_PROGRESS": 27,
               "OUT_OF_ORDER_SEQUENCE_NUMBER": 45, "INVALID_PRODUCER_EPOCH": 47,
               "CONCURRENT_TRANSACTIONS": 51, "KAFKA_STORAGE_ERROR": 56, "FENCED_LEADER_EPOCH": 74,
               "UNKNOWN_LEADER_EPOCH": 75, "TRANSACTION_ABORTABLE": 120}
CLIENT_ID_RE = re.compile(r"[A-Za-z0-9._-]{1,64}")
# zookeeper: the ZooKeeper node of a ZooKeeper-mode cluster, for the kinds that stop or freeze it
ON_ZOOKEEPER = ("kill", "terminate", "pause")
TARGETS = (*COUNTED, "leader", "followers", "controller", "isr", "non-isr", *COORDINATORS,
           "zookeeper")


@dataclass(frozen=True)
class Gate:
    """The request whose arrival on a connection starts its hold: a Kafka API key (for EndTxn,
    whether only one that commits does), or a ZooKeeper opcode."""

    api_key: int
    commits: bool = False


# hold-requests: the Kafka requests a `request` can name, by API key (Kafka's ApiKeys)
API_KEYS = {"Produce": 0, "Fetch": 1, "ListOffsets": 2, "Metadata": 3, "OffsetCommit": 8,
            "OffsetFetch": 9, "FindCoordinator": 10, "JoinGroup": 11, "Heartbeat": 12,
            "SyncGroup": 14, "ApiVersions": 18, "InitProducerId": 22, "OffsetForLeaderEpoch": 23,
            "AddPartitionsToTxn": 24, "AddOffsetsToTxn": 25, "EndTxn": 26, "WriteTxnMarkers": 27,
            "TxnOffsetCommit": 28, "Vote": 52, "BeginQuorumEpoch": 53, "AlterPartition": 56,
            "FetchSnapshot": 59, "BrokerHeartbeat": 63, "ConsumerGroupHeartbeat": 68,
            "ShareGroupHeartbeat": 76, "ShareFetch": 78, "ShareAcknowledge": 79,
            "InitializeShareGroupState": 83, "ReadShareGroupState": 84, "WriteShareGroupState": 85,
            "DeleteShareGroupState": 86, "ReadShareGroupStateSummary": 87}
API_NAMES = {key: name for name, key in API_KEYS.items()}
# hold-requests on a ZooKeeper-mode node's own ZooKeeper connection (link: controller): the requests
# a `request` can name, by opcode (ZooKeeper's ZooDefs.OpCode)
ZK_OPS = {"ZooKeeper.create": 1, "ZooKeeper.delete": 2, "ZooKeeper.exists": 3,
          "ZooKeeper.getData": 4, "ZooKeeper.setData": 5, "ZooKeeper.getChildren": 8,
          "ZooKeeper.ping": 11, "ZooKeeper.check": 13, "ZooKeeper.multi": 14,
          "ZooKeeper.create2": 15}
ZK_NAMES = {key: name for name, key in ZK_OPS.items()}
# a stale COMMIT is what can end a later transaction
REQUEST_GATES = {name: Gate(key) for name, key in API_KEYS.items()} | {
    "EndTxn(commit)": Gate(API_KEYS["EndTxn"], commits=True)} | {
    name: Gate(key) for name, key in ZK_OPS.items()}
# a line whose every op is a kind and a target drawn from the seed (Jepsen's combined nemesis)
MIX = "mix"
# The targets a mix draws for a kind aimed at brokers: with two replicas or more, never every
# replica at once, so an op of a mix loses together no more than a line of its kind aimed at one
# broker could
MIX_TARGETS = ("one", "leader", "followers", "controller")


class FaultSpec(BaseModel):
    """One fault line: its kind, target and timing, and the fields some kinds read."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    fault: str
    target: str | int | list[int] = "one"
    every: Seconds = Field(20.0, ge=0.5, le=86400)
    for_: Seconds = Field(5.0, alias="for", ge=0, le=86400)
    jitter: Seconds = Field(0.0, ge=0, le=86400)
    after: Seconds = Field(5.0, ge=0, le=86400)
    probability: float = Field(0.3, gt=0, le=1)
    kbit: int = Field(512, ge=8, le=10_000_000)
    # power-loss: a file that grew keeps part of a page of what it had not fsynced
    torn: bool = False
    # disk-slow: each write and fsync; latency: each packet
    latency_ms: int = Field(100, ge=1, le=60_000)
    jitter_ms: int = Field(0, ge=0, le=60_000)  # latency: plus or minus, drawn uniformly per packet
    link: Link = "clients"  # latency, hold-requests: which of the targets' listeners
    # hold-requests: hold each connection from its first request of this kind (or response to one)
    # on (any: from the op's start)
    request: str = "any"
    direction: Direction = "request"  # hold-requests: hold what arrives, or what the targets answer
    action: Action = "delay"  # hold-requests
    error: str | None = None  # hold-requests with action error: a name of ERROR_CODES
    # hold-requests with a request: only that request from clients whose id starts with this
    client_id: str | None = None
    # mix: the kinds it picks among, one per op (and a target for each, from MIX_TARGETS)
    kinds: list[str] = []
    to: str | None = None  # upgrade: the Kafka release the brokers roll to
    # upgrade: then roll each broker back to its release, the feature levels never finalized (the
    # downgrade Kafka supports)
    rollback: bool = False
    # quorum-swap: what befalls it meanwhile: the controller it removes killed, or the one it adds
    # cut off from the others
    disrupt: Literal["none", "kill-removed", "isolate-added"] = "none"

    @model_validator(mode="before")
    @classmethod
    def _default_target(cls, data: Any) -> Any:
        kind = FAULT_KINDS.get(data.get("fault")) if isinstance(data, dict) else None
        if kind is not None and "target" not in data:
            return {**data, "target": kind.default_target}
        return data

    @field_validator("fault")
    @classmethod
    def _known(cls, v: str) -> str:
        if v != MIX and v not in FAULT_KINDS:
            raise ValueError(f"Expected one of {one_of([*FAULT_KINDS, MIX])}")
        return v

    @field_validator("kinds")
    @classmethod
    def _mixable(cls, v: list[str]) -> list[str]:
        mixable = [k for k, kind in FAULT_KINDS.items()
                   if kind.aims in ("brokers", "itself") and not kind.once]
        if bad := [k for k in v if k not in mixable]:
            raise ValueError(f"Expected fault kinds among {one_of(mixable)}, not {bad[0]!r}")
        return v

    @model_validator(mode="after")
    def _mix(self) -> FaultSpec:
        if (self.fault == MIX) != bool(self.kinds):
            raise ValueError("fault: mix needs kinds: [...], the fault kinds it picks among; only "
                             "a mix takes kinds")
        if self.direction == "response" and self.request == "EndTxn(commit)":
            raise ValueError("request: EndTxn(commit) reads the request's body; with direction: "
                             "response use request: EndTxn")
        if problem := self._selection_problem():
            raise ValueError(problem)
        if self.to is None and "to" in getattr(FAULT_KINDS.get(self.fault), "params", ()):
            raise ValueError(f"fault: {self.fault} needs to: VERSION, the Kafka release the "
                             "brokers roll to")
        return self

    def _selection_problem(self) -> str | None:
        """Why a hold's error answer or client selection cannot work as written, or None."""
        if (self.action == "error") != (self.error is not None):
            return ("action: error needs error: NAME, the Kafka error code it answers with; only "
                    "that action takes error")
        if self.action == "error" and (self.direction != "response" or self.request == "any"):
            return ("action: error rewrites answers to one kind of request; set direction: "
                    "response and a request, like request: Produce")
        if self.client_id is not None and self.request == "any":
            return "client_id selects among one kind of request; set a request, like Produce"
        if self.request in ZK_OPS and (self.link, self.direction) != ("controller", "response"):
            return (f"request: {self.request} is ZooKeeper's: it holds the answers on a node's own "
                    "ZooKeeper connection; set link: controller and direction: response")
        if self.request in ZK_OPS and (self.action == "error" or self.client_id is not None):
            return (f"request: {self.request} is ZooKeeper's, which has no Kafka error codes or "
                    "client ids; use action delay, hold, drop or reset, without client_id")
        return None

    @field_validator("error")
    @classmethod
    def _error(cls, v: str | None) -> str | None:
        if v is not None and v not in ERROR_CODES:
            raise ValueError(f"Expected one of {one_of(list(ERROR_CODES))}")
        return v

    @field_validator("client_id")
    @classmethod
    def _client_id(cls, v: str | None) -> str | None:
        if v is not None and not CLIENT_ID_RE.fullmatch(v):
            raise ValueError("Expected a client id prefix of 1 to 64 letters, digits, '.', '_' or "
                             "'-', like kchaos-producer")
        return v

    @field_validator("request")
    @classmethod
    def _request(cls, v: str) -> str:
        if v != "any" and v not in REQUEST_GATES:
            raise ValueError(f"Expected one of {one_of(['any', *REQUEST_GATES])}")
        return v

    @field_validator("to")
    @classmethod
    def _version(cls, v: str | None) -> str | None:
        if v is not None and not VERSION_RE.match(v):
            raise ValueError("Expected a Kafka version like '4.4.0'")
        return v

    def check_line(self, i: int, duration: float) -> None:
        """Raise for line `i` of a run of `duration` s: it must plan an op within the run, its
        jitter must not reverse its period, and it may set no field that only other kinds read
        (kbit on a pause, link on a kill), which would be ignored silently."""
        if self.after + min(self.for_, duration) > duration:
            raise ValueError(f"faults.{i}: after={self.after:g} s plus for={self.for_:g} s exceeds "
                             f"duration={duration:g} s, so the line would never fire; lower "
                             "after or raise duration")
        if self.jitter >= self.every:
            raise ValueError(f"faults.{i}.jitter={self.jitter:g} s must be below "
                             f"every={self.every:g} s")
        params = frozenset().union(*(FAULT_KINDS[k].params for k in self.fired_kinds()))
        fields = type(self).model_fields
        changed = {n for n in FAULT_PARAMS if getattr(self, n) != fields[n].default}
        for name in sorted(changed - params):
            readers = [k for k, other in FAULT_KINDS.items() if name in other.params]
            raise ValueError(f"faults.{i}.{name}={getattr(self, name)!r} is not read by a "
                             f"{self.fault!r} fault (only {one_of(readers)} "
                             f"{'reads' if len(readers) == 1 else 'read'} it); remove it")

    def fired_kinds(self) -> list[str]:
        """The fault kinds this line's ops may be: a mix's kinds, else its own."""
        return list(self.kinds) if self.fault == MIX else [self.fault]

    @field_validator("target")
    @classmethod
    def _target(cls, v: Any) -> Any:
        if isinstance(v, str) and v not in TARGETS:
            raise ValueError(f"Expected one of {one_of(TARGETS)} or node ids")
        return v


def lines_problem(faults: list[FaultSpec], version: str, metadata: str,
                  brokers: int = 3) -> str | None:
    """Why the fault lines cannot run on a Kafka version in a metadata mode with `brokers`, or
    None."""
    zk = [k for f in faults for k in f.fired_kinds() if FAULT_KINDS[k].zookeeper_only]
    if metadata == "kraft" and zk:
        return (f"fault {zk[0]} reads and triggers elections through ZooKeeper; "
                f"kafka.version={version!r} runs KRaft: use a ZooKeeper-mode version "
                "(kafka.metadata: zookeeper)")
    if problem := (_zookeeper_target_problem(faults, version, metadata)
                   or _zookeeper_link_problem(faults, version, metadata)
                   or _quorum_problem(faults, version, metadata, brokers)):
        return problem
    moves = [i for i, f in enumerate(faults)
             if any(FAULT_KINDS[k].migrates for k in f.fired_kinds())]
    if moves and (problem := _migration_problem(moves, zk, version, metadata)):
        return problem
    ups = [(i, f.to) for i, f in enumerate(faults) if f.to is not None]
    if len(ups) > 1:
        return f"faults.{ups[1][0]}: a scenario rolls the brokers once; keep one upgrade line"
    return next(filter(None, (upgrade_problem(version, metadata, to, f"faults.{i}.to")
                              for i, to in ups)), None)


def _migration_problem(moves: list[int], zk: list[str], version: str,
                       metadata: str) -> str | None:
    """Why migrate lines (at indexes `moves`) cannot run beside `zk`'s ZooKeeper-only kinds."""
    if len(moves) > 1:
        return f"faults.{moves[1]}: a scenario migrates the cluster once; keep one migrate line"
    if zk:
        return (f"fault {zk[0]} reads and triggers elections through ZooKeeper, which a migration "
                f"leaves behind (faults.{moves[0]}); run it in a scenario of its own")
    return migration_problem(version, metadata, f"faults.{moves[0]}")


def _zookeeper_target_problem(faults: list[FaultSpec], version: str, metadata: str) -> str | None:
    """Why a line aimed at ZooKeeper cannot run, or None."""
    for i, f in enumerate(faults):
        if f.target != "zookeeper":
            continue
        if metadata != "zookeeper":
            return (f"faults.{i}.target='zookeeper' needs a ZooKeeper-mode cluster; kafka.version="
                    f"{version!r} runs KRaft")
        if f.fault not in ON_ZOOKEEPER:
            return (f"faults.{i}.fault={f.fault!r} cannot aim at ZooKeeper: use "
                    f"{one_of(ON_ZOOKEEPER)}, or aim it at brokers")
    return None


def _zookeeper_link_problem(faults: list[FaultSpec], version: str, metadata: str) -> str | None:
    """Why a hold of ZooKeeper's frames cannot run, or None: in ZooKeeper mode a node's controller
    link is its own ZooKeeper connection, whose answers a hold takes by ZooKeeper opcode."""
    for i, f in enumerate(faults):
        if not any("request" in FAULT_KINDS[k].params for k in f.fired_kinds()):
            continue  # only a kind that selects requests holds frames by kind
        if f.request in ZK_OPS and metadata != "zookeeper":
            return (f"faults.{i}.request={f.request!r} holds ZooKeeper's answers, but "
                    f"kafka.version={version!r} runs KRaft; use a ZooKeeper-mode cluster")
        if (metadata == "zookeeper" and f.link == "controller"
                and (f.direction != "response" or f.request not in ("any", *ZK_OPS))):
            return (f"faults.{i}: in ZooKeeper mode link: controller is the node's own ZooKeeper "
                    "connection; set direction: response and a ZooKeeper request, like "
                    "request: ZooKeeper.multi")
    return None


def _quorum_problem(faults: list[FaultSpec], version: str, metadata: str,
                    brokers: int) -> str | None:
    """Why a line that changes the KRaft voters cannot run, or None: it needs a dynamic quorum
    (KIP-853) and a node outside the three voters to swap in."""
    i = next((i for i, f in enumerate(faults)
              if any(FAULT_KINDS[k].dynamic_quorum for k in f.fired_kinds())), None)
    if i is None:
        return None
    if metadata != "kraft" or release(version) < DYNAMIC_QUORUM_FROM:
        return (f"faults.{i}.fault={faults[i].fault!r} changes a dynamic KRaft quorum (KIP-853, "
                f"Kafka 3.9+ in KRaft mode), not kafka.version={version!r} in {metadata} mode; "
                "use 3.9.2 or later")
    if brokers < 4:
        return (f"faults.{i}.fault={faults[i].fault!r} swaps a fourth node into the three "
                f"voters, but kafka.brokers={brokers}; set kafka.brokers: 4 or 5")
    return None
