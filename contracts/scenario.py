"""The scenario model: pydantic models and their one-line error messages. The fault kinds and
anomaly names a scenario may use are contracts.faultkinds' and contracts.anomalies', each written
once."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from contracts.clients import ClientName, client_problem
from contracts.faultkinds import FAULT_KINDS
from contracts.faultlines import COUNTED, MIX, FaultSpec, lines_problem
from contracts.fields import (
    Anomaly,
    Regression,
    ScenarioName,
    Seconds,
    Strict,
    one_of,
)
from contracts.share import ShareSpec, share_problem
from contracts.topic import TopicSpec, setting
from contracts.transactions import transaction_problem
from contracts.versions import (
    DEFAULT_VERSION,
    OLDEST,
    TXN_V2_FROM,
    Metadata,
    default_metadata,
    metadata_problem,
    release,
)

QUOTED = r"'([^']*)'"  # the values a message lists
# Cluster events a scenario can exist to provoke; the analysis observes them in the history
# (reports.provoked)
PROVOKED = ("isr-shrink", "leader-election", "unclean-election", "controller-change", "rebalance",
            "txn-protocol-switch", "share-redelivery")


def transactional_id(producer: int) -> str:
    """The transactional.id of a scenario's transactional producer (kept across its restarts)."""
    return f"chaos-txn-{producer}"


def copier_id(copier: int) -> str:
    """The transactional.id of an eos-copy stage's instance (kept across its restarts, so a new one
    fences it)."""
    return f"chaos-copy-{copier}"


def copy_topic(topic: str) -> str:
    """The output topic of the eos-copy pipeline whose input is `topic`."""
    return f"{topic}-copy"


def copy_input(output: str) -> str:
    """The input topic of the eos-copy pipeline whose output is `output` (copy_topic's inverse)."""
    return output.removesuffix("-copy")


def second_topic(topic: str) -> str:
    """The other topic transactions span with `producer.txn_topics: 2`."""
    return f"{topic}-2"


class KafkaSpec(Strict):
    version: str = DEFAULT_VERSION
    brokers: int = Field(3, ge=1, le=5)
    # unset: KRaft from 3.3, ZooKeeper before (so `--kafka V` picks the mode V runs in)
    metadata: Metadata | None = None
    config: dict[str, str | int | float | bool] = {}
    # settings of single brokers, by broker id, over `config` (a follower that fetches less per
    # request, say)
    broker_overrides: dict[int, dict[str, str | int | float | bool]] = {}

    @field_validator("version", mode="before")
    @classmethod
    def _str(cls, v: Any) -> str:
        return str(v)

    def broker_config(self) -> dict[str, str]:
        """The broker settings the scenario overrides, as server.properties values."""
        return {k: setting(v) for k, v in self.config.items()}

    def per_broker_config(self) -> dict[int, dict[str, str]]:
        """Each overridden broker's own settings, as server.properties values."""
        return {b: {k: setting(v) for k, v in cfg.items()}
                for b, cfg in self.broker_overrides.items()}

    @property
    def mode(self) -> str:
        """The metadata mode the cluster runs in: the scenario's, or the version's default."""
        return self.metadata or default_metadata(self.version)

    @model_validator(mode="after")
    def _mode_fits_version(self) -> KafkaSpec:
        problem = metadata_problem(self.version, self.mode)
        if problem:
            raise ValueError(problem)
        for broker in self.broker_overrides:
            if not 1 <= broker <= self.brokers:
                raise ValueError(f"kafka.broker_overrides names broker {broker}, but the brokers "
                                 f"are 1..{self.brokers}")
        return self


class ProducerSpec(Strict):
    # at least one: a run in which nothing writes could check nothing
    count: int = Field(2, ge=1, le=16)
    acks: Literal["0", "1", "all"] = "all"
    idempotence: bool = True
    retries: int = Field(2147483647, ge=0, le=2147483647)
    max_in_flight: int = Field(5, ge=1, le=100)
    linger_ms: int = Field(5, ge=0, le=60_000)
    batch_size: int = Field(16384, ge=1, le=16 * 1024 * 1024)
    compression: Literal["none", "gzip", "snappy", "lz4", "zstd"] = "none"
    message_timeout_ms: int = Field(30000, ge=1000, le=3_600_000)
    # librdkafka: how long the broker may wait for acks
    request_timeout_ms: int = Field(10000, ge=500, le=600_000)
    # librdkafka: when the client gives a request up; None leaves librdkafka's default (60 s, or
    # just under the transaction timeout for a transactional producer)
    socket_timeout_ms: int | None = Field(None, ge=10, le=300_000)
    keyed: bool = False
    payload_bytes: int = Field(64, ge=24, le=1_000_000)
    # messages per second per producer; 0 = as fast as possible
    rate: float = Field(1000, ge=0, le=1_000_000)
    # each producer sends in transactions (KIP-98) under its own transactional.id
    transactional: bool = False
    # sends per transaction: 1 to this many, drawn per transaction
    txn_sends: int = Field(5, ge=1, le=10_000)
    # the share of transactions a transactional producer aborts
    abort_ratio: float = Field(0.2, ge=0, le=1)
    transaction_timeout_ms: int = Field(60000, ge=1000, le=900_000)
    # 2: each transaction's sends are spread over topic.name and a second topic
    txn_topics: int = Field(1, ge=1, le=2)
    # how long each transaction stays open once its sends are acknowledged (an application's
    # processing) before it commits or aborts
    txn_open_ms: int = Field(0, ge=0, le=600_000)
    client: ClientName = "librdkafka"

    @field_validator("acks", mode="before")
    @classmethod
    def _acks_str(cls, v: Any) -> str:
        return "all" if v == -1 else str(v)

    @property
    def may_rewrite(self) -> bool:
        """Whether a retry can write a batch a second time: retries without idempotence's
        de-duplication."""
        return self.retries > 0 and not self.idempotence


class ConsumerSpec(Strict):
    count: int = Field(2, ge=0, le=16)
    group: str = "chaos"
    mode: Literal["subscribe", "assign"] = "subscribe"
    # after: commit once the reads are recorded (at-least-once); before: commit first (at-most-once,
    # unsafe)
    commit: Literal["auto", "after", "before"] = "after"
    # both: consumers alternate read_committed (even indices) and read_uncommitted (odd) side by
    # side
    isolation: Literal["read_uncommitted", "read_committed", "both"] = "read_uncommitted"
    # subscribe mode: the classic group protocol with a client-side assignor, or KIP-848's
    # (group.protocol=consumer, Kafka 4.0+), where the broker assigns partitions incrementally and
    # no assignor is named
    group_protocol: Literal["classic", "consumer"] = "classic"
    assignor: Literal["range", "roundrobin", "cooperative-sticky"] = "range"
    # where a member starts in a partition its group has no committed offset for; with latest,
    # producers start only once every member has its first assignment, so a fresh group does not
    # start past the first records
    reset: Literal["earliest", "latest"] = "earliest"
    # To prove the transactional checkers can fail: judge every reader as this level, whatever it
    # reads with
    judged_as: Literal["read_uncommitted", "read_committed"] | None = None
    client: ClientName = "librdkafka"

    def isolation_of(self, cid: int) -> str:
        """The isolation.level consumer `cid` reads with."""
        if self.isolation == "both":
            return "read_committed" if cid % 2 == 0 else "read_uncommitted"
        return self.isolation

    def judged_isolation(self, cid: int) -> str:
        """The isolation level the analysis holds consumer `cid`'s reads to."""
        return self.judged_as or self.isolation_of(cid)


class CopierSpec(Strict):
    """The consume-transform-produce stage of `workload: eos-copy` (KIP-98, KIP-447): instances in
    one group read the topic with read_committed and copy each record, transformed, to its output
    topic in transactions that also commit their input offsets."""

    count: int = Field(2, ge=1, le=8)
    group: str = "chaos-copy"
    records: int = Field(50, ge=1, le=10_000)  # records per transaction at most (one consume batch)
    # transactions aborted on purpose, as a failed transform would
    abort_ratio: float = Field(0.1, ge=0, le=1)
    # in-transaction: send_offsets_to_transaction (exactly-once); outside: consumer.commit before
    # the transaction commits (the broken stage that proves eos-loss can be caught)
    offsets: Literal["in-transaction", "outside"] = "in-transaction"
    transaction_timeout_ms: int = Field(30000, ge=1000, le=900_000)
    client: ClientName = "librdkafka"


class Scenario(Strict):
    """A whole chaos run: cluster, topic, clients, faults, duration and seed."""

    name: ScenarioName
    description: str = ""
    guarantee: str = ""
    kafka: KafkaSpec = KafkaSpec()
    topic: TopicSpec = TopicSpec()
    producer: ProducerSpec = ProducerSpec()
    consumer: ConsumerSpec = ConsumerSpec()
    # produce-consume: producers and live consumers on one topic; eos-copy: copiers (below) copy it
    # to another too; share: share consumers (below) read it in place of the consumers
    workload: Literal["produce-consume", "eos-copy", "share"] = "produce-consume"
    copier: CopierSpec = CopierSpec()
    share: ShareSpec = ShareSpec()
    faults: list[FaultSpec] = []
    duration: Seconds = Field(60.0, ge=1, le=7 * 86400)
    seed: int = Field(42, ge=0, le=2**31 - 1)
    expect: list[Anomaly] = []
    provokes: list[Literal[PROVOKED]] = []  # type: ignore[valid-type]  # events that must be seen, or unknown
    recovery_timeout: Seconds = Field(120.0, ge=1, le=3600)
    # the final drain gives up this long after its last record
    drain_timeout: Seconds = Field(90.0, ge=1, le=3600)
    # a known bug: its violation is the bug found again on `affected`
    regression: Regression | None = None

    @field_validator("expect", "provokes", mode="before")
    @classmethod
    def _expect(cls, v: Any) -> Any:
        return [] if v in ({}, None) else v

    @model_validator(mode="after")
    def _coherent(self) -> Scenario:
        if self.topic.replication_factor > self.kafka.brokers:
            raise ValueError(f"topic.replication_factor={self.topic.replication_factor} exceeds "
                             f"kafka.brokers={self.kafka.brokers}")
        if self.topic.replicas is not None and (len(self.topic.replicas)
                                                != self.topic.replication_factor or
                                                 not set(self.topic.replicas)
                                                <= set(range(1, self.kafka.brokers + 1))):
            raise ValueError(f"topic.replicas={self.topic.replicas} must name "
                             f"{self.topic.replication_factor} distinct brokers among "
                             f"1..{self.kafka.brokers}")
        if self.topic.min_insync_replicas > self.topic.replication_factor:
            raise ValueError(f"topic.min_insync_replicas={self.topic.min_insync_replicas} exceeds "
                             f"topic.replication_factor={self.topic.replication_factor}")
        for i, f in enumerate(self.faults):
            kinds = [FAULT_KINDS[k] for k in f.fired_kinds()]
            if f.fault != MIX and kinds[0].aims in ("consumers", "producers", "copiers"):
                self._client_target(i, f, kinds[0].aims)
            elif f.fault != MIX and kinds[0].aims == "brokers":
                self._broker_target(i, f)
            if (kinds[0].aims == "tier" or f.link == "remote-metadata") and not (
                    self.topic.remote_storage):
                raise ValueError(f"faults.{i}.fault={f.fault!r} breaks the remote tier, which "
                                 "only topic.remote_storage: true gives; set it" if f.link !=
                                 "remote-metadata" else f"faults.{i}.link='remote-metadata' is "
                                 "tiered storage's metadata producer's listener, which only "
                                 "topic.remote_storage: true starts; set it")
            f.check_line(i, self.duration)
        if self.producer.idempotence and (self.producer.acks != "all"
                                          or self.producer.max_in_flight > 5):
            raise ValueError("producer.idempotence=true needs producer.acks='all' and "
                             "producer.max_in_flight<=5 (librdkafka refuses otherwise)")
        problem = self.version_problem(self.kafka.version)
        if problem:
            raise ValueError(problem)
        if problem := transaction_problem(self.producer):
            raise ValueError(problem)
        p = self.producer
        if p.txn_topics > 1 and (not p.transactional or self.workload != "produce-consume"):
            raise ValueError(f"producer.txn_topics={p.txn_topics} needs "
                             "producer.transactional=true "
                             "and workload='produce-consume' (not "
                             f"transactional={p.transactional}, "
                             f"workload={self.workload!r}); set txn_topics: 1")
        if self.producer.transactional and not self.producer.idempotence:
            raise ValueError("producer.transactional=true needs producer.idempotence=true (a "
                             "transactional producer is idempotent); remove "
                             "producer.idempotence=false")
        return self

    def _broker_target(self, i: int, f: FaultSpec) -> None:
        """Node ids a fault names must be brokers of this cluster."""
        if f.target == "share-coordinator" and self.workload != "share":
            raise ValueError(f"faults.{i}.target='share-coordinator' needs workload='share' (not "
                             f"{self.workload!r})")
        ids = f.target if isinstance(f.target, list) else [f.target] if isinstance(
            f.target, int) else []
        if any(not 1 <= n <= self.kafka.brokers for n in ids) or (
                isinstance(f.target, list) and not ids):
            raise ValueError(f"faults.{i}.target={f.target!r} must name brokers among "
                             f"1..{self.kafka.brokers} (kafka.brokers={self.kafka.brokers})")

    def _client_target(self, i: int, f: FaultSpec, aims: str) -> None:
        """A fault aimed at the workload's clients names them by count (one, all, minority,
        majority) or index."""
        n = {"consumers": self.share.count if self.workload == "share" else self.consumer.count,
             "producers": self.producer.count,
             "copiers": self.copier.count if self.workload == "eos-copy" else 0}[aims]
        ids = f.target if isinstance(f.target, list) else [f.target] if isinstance(
            f.target, int) else []
        if aims == "copiers" and self.workload != "eos-copy":
            raise ValueError(f"faults.{i}.fault={f.fault!r} needs workload='eos-copy' (not "
                             f"{self.workload!r})")
        if n == 0:
            raise ValueError(f"faults.{i}.fault={f.fault!r} needs {aims[:-1]}.count >= 1")
        if isinstance(f.target, str) and f.target not in COUNTED:
            raise ValueError(f"Expected one of {one_of(COUNTED)} or {aims[:-1]} indices "
                             f"but got faults.{i}.target={f.target!r} ({f.fault} aims at {aims})")
        if any(not 0 <= c < n for c in ids):
            raise ValueError(f"faults.{i}.target={f.target!r} must name {aims} among 0..{n - 1}")

    def version_problem(self, version: str, metadata: str | None = None) -> str | None:
        """Why the scenario cannot run on a Kafka version (in `metadata` mode, if given; or a
        feature it lacks)."""
        if release(version) < OLDEST:
            return (f"Kafka {version} is older than 0.10.2, the oldest the harness runs "
                    f"(kafka.version={version!r}); `kchaos images list --available` lists the "
                    "others")
        if self.consumer.group_protocol == "consumer" and release(version) < (4, 0):
            return (f"consumer.group_protocol='consumer' (KIP-848) needs Kafka 4.0 or later, not "
                    f"kafka.version={version!r}; use group_protocol: classic")
        if self.producer.idempotence and release(version) < (0, 11):
            return ("producer.idempotence=true (KIP-98) needs Kafka 0.11 or later, not "
                    f"kafka.version={version!r}; set producer.idempotence: false")
        if metadata and self.kafka.metadata and metadata != self.kafka.metadata:
            return (f"the scenario runs in {self.kafka.metadata} mode only (kafka.metadata: "
                    f"{self.kafka.metadata}), not {metadata}: ask for Kafka {version} without "
                    f"':{metadata}'")
        if problem := self.topic.version_problem(version):
            return problem
        if "txn-protocol-switch" in self.provokes and release(version) >= TXN_V2_FROM:
            return (f"the scenario exists to provoke txn-protocol-switch, and Kafka {version} runs "
                    "transactions v2 from the start: start it on a 3.x release")
        if self.workload == "share" and (problem := share_problem(version)):
            return problem
        if problem := next(filter(None, (client_problem(r, spec.client, version)
                                         for r, spec in self.roles().items())), None):
            return problem
        metadata = metadata or self.kafka.metadata or default_metadata(version)
        return metadata_problem(version, metadata) or lines_problem(self.faults, version, metadata,
                                                                    self.kafka.brokers)

    @property
    def proof(self) -> bool:
        """Whether the scenario is a checker's proof: it judges its readers by a level they do not
        read with (`consumer.judged_as`), so its `expect`ed forbidden anomalies are planted."""
        return self.consumer.judged_as is not None

    @property
    def bug_expected(self) -> Regression | None:
        """The known bug the run should find again: the scenario's, on the release that has it."""
        bug = self.regression
        return bug if bug and self.kafka.version == bug.affected else None

    def runs_on(self, version: str, metadata: str | None = None) -> bool:
        """Whether the scenario can run on another Kafka version (in `metadata` mode, if given)."""
        return self.version_problem(version, metadata) is None

    def roles(self) -> dict[str, ProducerSpec | ConsumerSpec | CopierSpec | ShareSpec]:
        """The client roles the workload runs, by name: each has its own `client`."""
        readers = {"share": self.share} if self.workload == "share" else {"consumer": self.consumer}
        return ({"producer": self.producer} | readers
                | ({"copier": self.copier} if self.workload == "eos-copy" else {}))

    def topics(self) -> tuple[str, ...]:
        """The topics the producers write and the consumers read (an eos-copy output topic is not
        one of them)."""
        t = self.topic.name
        return (t, second_topic(t)) if self.producer.txn_topics > 1 else (t,)


def only_planted(proof: bool, found: set[str], expect: list[str], allowed: set[str]) -> bool:
    """Whether a checker's proof found forbidden anomalies, all expected and none allowed."""
    return proof and bool(found) and found <= set(expect) - allowed
