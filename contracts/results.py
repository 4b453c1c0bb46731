"""The results contract: `RunResult` is results.json, what the console, JUnit, the report and the comparison read.
It imports neither pyspark nor the checkers, so reading results is cheap."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from contracts import provenance

SAMPLED_SENDS = 20_000  # individual sends the latency chart draws, sampled evenly


PartitionName = Annotated[str, BeforeValidator(str)]  # topic-partition; older results.json name a partition by number


def partition_name(topic: str, partition: int) -> str:
    """A partition as Kafka names it (`chaos-2` is partition 2 of `chaos`), in facts, metrics and charts."""
    return f"{topic}-{partition}"


@dataclass
class Facts:
    """What the run established; anything False makes some checks unknown."""

    drain_ran: bool
    drain_complete: bool
    partitions_not_drained: list[PartitionName]
    replicas_dumped: bool
    recovered: bool
    assign_readers: list[str]
    committed_readers: list[str] = field(default_factory=list)  # live readers held to read_committed
    transactional: bool = False  # the history has transactions (their markers leave gaps in the offsets)
    group_commits: str = "none"  # "none" (no group), "known", or "unknown" (the committed offsets were not read)
    client_trouble: list[str] = field(default_factory=list)  # the first client errors, fatal errors and restarts
    ops: dict[str, int] = field(default_factory=dict)  # planned fault ops by how they ended (fired, skipped, ...)
    chaos_problems: list[str] = field(default_factory=list)  # ops that failed or had no effect; lines that never fired
    observed: list[str] = field(default_factory=list)  # cluster events the run showed (contracts.scenario.PROVOKED)
    # eos-copy: "none" (no stage), "known" or "unknown" (its final committed offsets could not be read), and the
    # input partitions whose committed offset the stage left below the input's end
    copy_commits: str = "none"
    copy_behind: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class Rule:
    """One anomaly's status under a scenario's settings, and the documentation it rests on."""

    anomaly: str
    allowed: bool
    why: str
    doc: str


SCHEMA_VERSION = 1
Valid = Literal["true", "false", "unknown"]


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
    """Where and when an anomaly's sends were acknowledged, over all of them (seconds since the first send)."""

    partitions: list[int]
    first_s: float
    last_s: float


class Requests(BaseModel):
    """What the producers' librdkafka counted of their requests to brokers, summed over every client handle."""

    timed_out: int = 0
    retried: int = 0
    errors: int = 0  # transmission errors


class Memory(BaseModel):
    """The harness's and its client processes' resident memory over a run, sampled each minute."""

    samples: int
    first_mib: float
    peak_mib: float
    harness_peak_mib: float
    slope_mib_per_h: float | None = None  # None under three samples or ten minutes
    growth_mib: dict[str, float] = {}  # each process's, the harness's and each client's by name, where there is a slope


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
    isr_recovery_s: float | None = None  # the longest time from a fault op's end to every partition's full ISR
    requests: Requests | None = None  # None: no producer reported its counters
    memory: Memory | None = None  # None: a history without memory samples


class RunResult(BaseModel):
    """One run's identity, verdict, anomalies, metrics and facts (schema_version says which shape)."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    kchaos_version: str = Field(default_factory=provenance.version)
    kchaos_commit: str = Field(default_factory=provenance.commit)
    scenario: str
    description: str = ""
    kafka: str
    seed: int
    run_dir: str
    started_utc: str = ""
    status: str = "complete"  # complete | error | interrupted | running (a run killed half-way)
    elapsed_s: float = 0.0
    verdict: Valid
    failed: bool
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
    settings: dict[str, Any] = {}  # the resolved scenario

    @property
    def badge(self) -> str:
        """PASS; EXPECTED ANOMALY (true, with anomalies the settings allow); FAIL (a guarantee violated or an
        expected anomaly not provoked); UNKNOWN (the run could not establish the facts, or did not complete)."""
        if self.verdict == "false" or (self.missing_expect and not self.error):
            return "FAIL"
        if self.verdict == "unknown" or self.error:
            return "UNKNOWN"
        return "EXPECTED ANOMALY" if self.allowed_seen else "PASS"

    def save(self, run_dir: Path) -> Path:
        """Write results.json into the run directory."""
        path = run_dir / "results.json"
        path.write_text(self.model_dump_json(indent=1))
        return path

    @classmethod
    def load(cls, path: Path) -> RunResult:
        """Read a results.json."""
        return cls.model_validate_json(path.read_text())
