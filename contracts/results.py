"""The results contract: `RunResult` is results.json, what the console, JUnit, the report and the
comparison read. It imports neither pyspark nor the checkers, so reading results is cheap."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, computed_field, model_validator

from contracts import provenance
from contracts.scenario import Scenario, only_planted

SAMPLED_SENDS = 20_000  # individual sends the latency chart draws, sampled evenly
LATE_S = 2.0  # a fault op that starts more than this after its planned time is late


# topic-partition; older results.json name a partition by number
PartitionName = Annotated[str, BeforeValidator(str)]


def partition_name(topic: str, partition: int) -> str:
    """A partition as Kafka names it (`chaos-2` is partition 2 of `chaos`), in facts, metrics and
    charts."""
    return f"{topic}-{partition}"


@dataclass
class Facts:
    """What the run established; anything False makes some checks unknown."""

    drain_ran: bool
    drain_complete: bool
    partitions_not_drained: list[PartitionName]
    replicas_dumped: bool
    recovered: bool  # no liveness finding
    assign_readers: list[str]
    # live readers held to read_committed
    committed_readers: list[str] = field(default_factory=list)
    # the history has transactions (their markers leave gaps in the offsets)
    transactional: bool = False
    # "none" (no group), "known", or "unknown" (the committed offsets were not read)
    group_commits: str = "none"
    # the first client errors, fatal errors and restarts
    client_trouble: list[str] = field(default_factory=list)
    # planned fault ops by how they ended (fired, skipped, ...)
    ops: dict[str, int] = field(default_factory=dict)
    late_ops: int = 0  # fired ops that started more than LATE_S after their planned time
    skipped_because: dict[str, int] = field(default_factory=dict)  # skipped ops by why
    # ops that failed or had no effect; lines that never fired
    chaos_problems: list[str] = field(default_factory=list)
    # cluster events the run showed (contracts.scenario.PROVOKED)
    observed: list[str] = field(default_factory=list)
    # eos-copy: "none" (no stage), "known" or "unknown" (its final committed offsets could not be
    # read), and the input partitions whose committed offset the stage left below the input's end
    copy_commits: str = "none"
    copy_behind: list[int] = field(default_factory=list)
    # share workload: "none", "known" or "unknown" (the share-partitions' final state was not read),
    # the records its members were handed while the faults ran and the final share consumer was
    # handed, and the lag its share-partitions were left with
    share_state: str = "none"
    share_live: int = 0
    share_final: int = 0
    share_lag: int = 0
    # the transaction protocols transactional producers said they ran (`txn-protocol`: v1, v2)
    txn_protocols: list[str] = field(default_factory=list)
    # what the cluster never reached (`liveness` events): a full ISR after healing or after a roll's
    # step, a migration's metadata copy, a voter change
    liveness: list[str] = field(default_factory=list)


def plan_share(facts: Facts | None) -> str:
    """How much of the planned chaos happened: `8 of 10 planned fault ops fired (2 skipped: brokers
    held by another line), 1 over 2 s late`; "" without planned ops."""
    planned = sum(facts.ops.values()) if facts else 0
    if not planned:
        return ""
    fired = facts.ops.get("fired", 0)
    rest = [f"{n} {outcome}"
            + (f": {', '.join(facts.skipped_because)}" if outcome == "skipped" else "")
            for outcome, n in facts.ops.items() if outcome != "fired" and n]
    late = f", {facts.late_ops} over {LATE_S:g} s late" if facts.late_ops else ""
    return f"{fired} of {planned} planned fault ops fired" + (
        f" ({'; '.join(rest)})" if rest else "") + late


@dataclass(frozen=True)
class Rule:
    """One anomaly's status under a scenario's settings, and the documentation it rests on."""

    anomaly: str
    allowed: bool
    why: str
    doc: str


# 2: `verdict` a boolean or null, `badge`, `known_bug`, `durations`, `client`, relative `run_dir`
# 3: `caught`
SCHEMA_VERSION = 3


class Badge(StrEnum):
    """What a run showed, one meaning each, from least to most severe. Console, report, JUnit and
    compare say these."""

    PASS = "PASS"
    EXPECTED_ANOMALY = "EXPECTED ANOMALY"
    CAUGHT = "CAUGHT"
    KNOWN_BUG = "KNOWN BUG"
    NOT_PROVOKED = "NOT PROVOKED"
    UNKNOWN = "UNKNOWN"
    FAIL = "FAIL"

    @property
    def meaning(self) -> str:
        return MEANINGS[self]

    @property
    def green(self) -> bool:
        """Whether CI passes on it; NOT PROVOKED and UNKNOWN pass only with --allow-unknown, FAIL
        never."""
        return self in (Badge.PASS, Badge.EXPECTED_ANOMALY, Badge.CAUGHT, Badge.KNOWN_BUG)


def expectation(s: Scenario, allowed: set[str]) -> str:
    """The badge a run of the scenario should get, and what it should show: expected anomalies its
    settings forbid (`allowed` are those they permit) are CAUGHT in a checker's proof, else FAIL."""
    if bug := s.bug_expected:
        return f"{Badge.KNOWN_BUG} {bug.bug} ({' or '.join(bug.shows)})"
    if not s.expect:
        return Badge.PASS.value
    badge = (Badge.EXPECTED_ANOMALY if set(s.expect) <= allowed
             else Badge.CAUGHT if s.proof else Badge.FAIL)
    return f"{badge} ({', '.join(s.expect)})"


MEANINGS = {
    Badge.PASS: "every guarantee held and no anomaly occurred",
    Badge.EXPECTED_ANOMALY: "only anomalies that the settings allow occurred, such as lost writes "
                            "with acks=1",
    Badge.CAUGHT: "a checker's proof found the forbidden anomaly its deliberately wrong judgement "
                  "plants, and no other: the checkers can fail",
    Badge.KNOWN_BUG: "a known Kafka bug was found again on the release that has it",
    Badge.NOT_PROVOKED: "the chaos did not show what the scenario exists to show: a harness miss, "
                        "not a Kafka bug",
    Badge.UNKNOWN: "the run could not establish the facts a verdict needs, or the harness could "
                   "not complete it",
    Badge.FAIL: "Kafka broke a guarantee that the settings and the version promise",
}


class Latency(BaseModel):
    """Ack latency percentiles and maximum, in ms (None without acks)."""

    p50: float | None = None
    p95: float | None = None
    p99: float | None = None
    max: float | None = None


class Window(BaseModel):
    """A stretch of more than a second without a successful ack, in seconds since the first send."""

    start_s: float
    length_s: float


class Span(BaseModel):
    """Where and when an anomaly's sends were acknowledged, over all of them (seconds since the
    first send)."""

    partitions: list[int]
    first_s: float
    last_s: float


class Requests(BaseModel):
    """What the producers' librdkafka counted of their requests to brokers, summed over every client
    handle."""

    timed_out: int = 0
    retried: int = 0
    errors: int = 0  # transmission errors


class RemoteTier(BaseModel):
    """What the remote tier of a tiered topic did over a run, as its sampler saw it."""

    uploaded: int = 0  # segments that appeared in the remote tier
    deleted: int = 0  # segments that left it
    log_start_moves: int = 0  # moves of a partition's log start offset


class ShareDeliveries(BaseModel):
    """What a share group's members were handed over a run, and why a record came back."""

    deliveries: int = 0  # records processed, each delivery counted
    records: int = 0  # distinct records
    again: int = 0  # records delivered more than once
    released: int = 0  # of those, records a member had released
    # the rest: a member died, was cut off or paused past its lock before it acknowledged them

    @property
    def held(self) -> int:
        """Records delivered again after a member lost its hold on them (no release)."""
        return self.again - self.released

    def brief(self) -> str:
        """The headline's clause: how many records came back, and why."""
        return (f"{self.again:,} record{'' if self.again == 1 else 's'} came back: "
                f"{self.released:,} released, {self.held:,} after a member's hold ended")

    def sentence(self) -> str:
        """The report's line: how many records came back of how many, and why."""
        return (f"{self.again:,} of {self.records:,} records "
                f"{'was' if self.again == 1 else 'were'} delivered more than once: "
                f"{self.released:,} after a release, {self.held:,} after a member died, was cut "
                "off or held them past their lock")


class Memory(BaseModel):
    """The harness's and its client processes' resident memory over a run, sampled each minute."""

    samples: int
    first_mib: float
    peak_mib: float
    harness_peak_mib: float
    slope_mib_per_h: float | None = None  # None under three samples or ten minutes
    # each process's, the harness's and each client's by name, where there is a slope
    growth_mib: dict[str, float] = {}


class Metrics(BaseModel):
    """Counts, latency and availability of a run's sends, reads and leaders."""

    acked: int = 0
    failed: int = 0
    indeterminate: int = 0
    latency_ms: Latency = Latency()
    unavailability: list[Window] = []
    unavailable_s: float = 0.0
    recovered: int = 0  # indeterminate sends found later in a read or a replica
    leader_changes: dict[str, int] = {}  # by topic-partition
    reads: int = 0
    # the longest time from a fault op's end to every partition's full ISR
    isr_recovery_s: float | None = None
    requests: Requests | None = None  # None: no producer reported its counters
    memory: Memory | None = None  # None: a history without memory samples
    remote: RemoteTier | None = None  # None: no tiered topic
    share: ShareDeliveries | None = None  # None: no share consumers


class Durations(BaseModel):
    """How long a run took, in seconds: set by the run and its first check, never changed by `kchaos
    analyze`."""

    run_s: float = 0.0  # set-up to teardown: everything before the analysis
    workload_s: float = 0.0  # the workload with its faults, within run_s
    analysis_s: float = 0.0  # analysis and verdict, after run_s

    @property
    def total_s(self) -> float:
        return round(self.run_s + self.analysis_s, 1)


class Client(BaseModel):
    """The client library a role of the workload ran, and its version."""

    library: str = ""
    version: str = ""

    def __str__(self) -> str:
        return f"{self.library} {self.version}"


VERDICTS = {"true": True, "false": False, "unknown": None}  # schema 1 wrote the verdict as a string


class RunResult(BaseModel):
    """One run's identity, verdict, anomalies, metrics and facts (schema_version says which
    shape)."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    kchaos_version: str = Field(default_factory=provenance.version)
    kchaos_commit: str = Field(default_factory=provenance.commit)
    scenario: str
    description: str = ""
    kafka: str
    seed: int
    # in results.json relative to where the command ran; `load` makes it the file's directory
    run_dir: str
    started_utc: str = ""
    status: str = "complete"  # complete | error | interrupted | running (a run killed half-way)
    durations: Durations = Durations()
    verdict: bool | None  # None: unknown
    # the known bug (`regression.bug`) this run found again on the release that has it
    known_bug: str = ""
    # a checker's proof found the forbidden anomalies it plants (its `expect`), and no others
    caught: bool = False
    error: str = ""  # the harness could not complete the run: why
    forbidden: dict[str, int] = {}
    allowed_seen: dict[str, int] = {}
    missing_expect: list[str] = []
    unknown_because: list[str] = []
    liveness: str = ""
    counts: dict[str, int] = {}
    examples: dict[str, list[dict[str, Any]]] = {}  # times in seconds since the first send (`*_s`)
    spans: dict[str, Span] = {}
    allowed: list[str] = []
    rules: list[Rule] = []
    metrics: Metrics | None = None
    facts: Facts | None = None
    nemesis_errors: list[str] = []
    node_exits: list[str] = []  # Kafka nodes that ended their own process (`alias: log line`)
    client: Client = Client()  # the producers'
    consumer_client: Client = Client()  # the readers' (consumers or share consumers)
    copier_client: Client = Client()  # the eos-copy stage's (none without one)
    # broker settings the harness added; the scenario's own are settings
    harness_broker_config: dict[str, str] = {}
    settings: dict[str, Any] = {}  # the resolved scenario

    @model_validator(mode="before")
    @classmethod
    def _upgrade(cls, data: Any) -> Any:
        """Read schema 1 (a string verdict, `failed`, one `elapsed_s`) and 2 (no `caught`); and
        drop the derived badge."""
        if not isinstance(data, dict):
            return data
        data = {k: v for k, v in data.items() if k != "badge"}
        # every older file says its schema; a result made in code says nothing
        if data.get("schema_version") == 1:
            data["verdict"] = VERDICTS.get(data.get("verdict"), data.get("verdict"))
            data.pop("failed", None)
            data["durations"] = {"run_s": data.pop("elapsed_s", 0.0)}
            bug = (data.get("settings") or {}).get("regression") or {}
            if data["verdict"] is False and bug.get("affected") == data.get("kafka"):
                data["known_bug"] = bug.get("bug", "")
            data["schema_version"] = 2
        if data.get("schema_version") == 2:  # `Scenario.proof`, on the resolved settings
            s = data.get("settings") or {}
            data["caught"] = only_planted((s.get("consumer") or {}).get("judged_as") is not None,
                                          set(data.get("forbidden") or {}), s.get("expect") or [],
                                          set(data.get("allowed") or []))
            data["schema_version"] = SCHEMA_VERSION
        return data

    @computed_field
    @property
    def badge(self) -> Badge:
        """The run's one badge: a violation, then what kept the run from a verdict, then a missed
        expectation."""
        if self.verdict is False:
            return (Badge.KNOWN_BUG if self.known_bug else Badge.CAUGHT if self.caught
                    else Badge.FAIL)
        if self.verdict is None or self.error:
            return Badge.UNKNOWN
        if self.missing_expect:
            return Badge.NOT_PROVOKED
        return Badge.EXPECTED_ANOMALY if self.allowed_seen else Badge.PASS

    @property
    def row_name(self) -> str:
        """The scenario's name without the `version=` tag of a version matrix, which `kafka` already
        says."""
        name, _, tags = self.scenario.partition("[")
        kept = [t for t in tags.removesuffix("]").split(",") if t and not t.startswith("version=")]
        return f"{name}[{','.join(kept)}]" if kept else name

    @property
    def failed(self) -> bool:
        """Kafka broke a guarantee the settings and the version promise."""
        return self.badge is Badge.FAIL

    def save(self, run_dir: Path) -> Path:
        """Write results.json into the run directory, its `run_dir` relative to the working
        directory."""
        path = run_dir / "results.json"
        path.write_text(self.model_copy(update={"run_dir": relative(run_dir)})
                        .model_dump_json(indent=1))
        return path

    @classmethod
    def load(cls, path: Path) -> RunResult:
        """Read a results.json of either schema; `run_dir` becomes the directory it is in, as an
        absolute path."""
        result = cls.model_validate_json(path.read_text())
        return result.model_copy(update={"run_dir": os.path.abspath(path.parent)})


def relative(path: Path) -> str:
    """A path relative to the working directory, even outside it (`../other/runs/...`)."""
    return os.path.relpath(path)
