"""The check after a run, and a run with its check: analyze the history with Spark, judge it, write
its reports."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import confluent_kafka
from pyspark.sql import SparkSession

from contracts import signals
from contracts.clients import java_release
from contracts.errors import EngineError, ImageError, UsageError
from contracts.results import Client, Durations, Metrics, RunResult, Span
from contracts.scenario import Scenario, copy_topic
from harness.broker_config import harness_settings
from reports import guarantees, render
from reports import spark as spark_jvm
from reports.analysis import Analysis, analyze, is_large
from reports.frames import Readers
from reports.verdict import verdict
from runloop.info import RunInfo, run_dir_for
from runloop.progress import Tick
from runloop.run import ChaosRun, cluster_spec
from workloads.consumer import reader_name


@dataclass
class Outcome:
    """One checked run: its result, the analysis, and where it all lives."""

    result: RunResult
    analysis: Analysis | None  # None when the harness could not complete the run
    run_dir: Path

    @property
    def failed(self) -> bool:
        return self.result.failed


_SPARK: SparkSession | None = None
_SPARK_LOCK = threading.Lock()
_WARMED = threading.Event()  # this process's Spark JVM has analyzed once
WARM_UP_WAIT_S = 120.0


def spark_session(master: str | None = None, large: bool = False) -> SparkSession:
    """One Spark session per process, started on first use (`large`: see reports.spark.session); a
    caller waits for one that is already starting."""
    global _SPARK
    with _SPARK_LOCK:
        if _SPARK is None:
            _SPARK = spark_jvm.session(master, large=large)
    return _SPARK


def warm_spark(master: str | None = None) -> threading.Thread:
    """Start the Spark session and analyze a small history with it in the background while a run's
    workload goes on, so the run's own analysis neither waits for a JVM nor pays for its cold JIT
    and code generation; a failure here is left for the analysis's own call to report. The report's
    modules (matplotlib, pandas) load here too, not before the run."""
    def start() -> None:
        with contextlib.suppress(Exception):
            from reports.warmup import analyze_small

            spark = spark_session(master)
            if not _WARMED.is_set():
                analyze_small(spark)
                _WARMED.set()

    thread = threading.Thread(target=start, name="spark-warm-up", daemon=True)
    thread.start()
    return thread


def client_of(client: str, kafka_version: str) -> Client:
    """The library and version a role's `client` names."""
    java = java_release(client, kafka_version)
    return (Client(library="java kafka-clients", version=java) if java else
            Client(library="librdkafka", version=confluent_kafka.libversion()[0]))


def _identity(scenario: Scenario, run_dir: Path) -> dict:
    """What every result says of its run: which scenario, on which Kafka, with which seed, where,
    how set."""
    info = RunInfo.load(run_dir)
    return {"scenario": scenario.name, "description": scenario.description or scenario.guarantee,
            "kafka": scenario.kafka.version, "seed": scenario.seed, "run_dir": str(run_dir),
            "started_utc": info.started_utc if info else "",
            "status": info.status if info else "unknown",
            "durations": Durations(run_s=round(sum(info.timings.values()), 1) if info else 0.0,
                                   workload_s=round(info.timings.get("faults", 0.0), 1) if info
                                   else 0.0),
            "client": client_of(scenario.producer.client, scenario.kafka.version),
            "consumer_client": client_of((scenario.roles().get("share")
                                          or scenario.consumer).client, scenario.kafka.version),
            "copier_client": client_of(scenario.copier.client, scenario.kafka.version)
            if scenario.workload == "eos-copy" else Client(),
            "harness_broker_config": harness_settings(cluster_spec(scenario)),
            "nemesis_errors": info.nemesis_errors if info else [],
            "node_exits": info.node_exits if info else [],
            "allowed": sorted(guarantees.allowed(scenario)),
            "settings": scenario.model_dump(mode="json", by_alias=True)}


TIMES = ("t_invoke", "t_complete", "t", "first_read_t")  # example columns on the history clock


def in_seconds(example: dict, t0: int) -> dict:
    """An example row with its history-clock times as seconds since the first send (`t_complete` ->
    `t_complete_s`), the axis every chart uses."""
    return {f"{k}_s" if k in TIMES else k: round((v - t0) / 1e9, 3) if k in TIMES and v is not None
            else v
            for k, v in example.items()}


def readers_of(scenario: Scenario) -> Readers:
    """The readers as the analysis must know them: assign-mode ones read every partition from the
    beginning; those held to read_committed (`consumer.judged_as` may say so of all, to prove the
    checkers can fail); the eos-copy stage's output topic, which the drain read with
    read_committed."""
    c = scenario.consumer
    return Readers(contiguous=tuple(reader_name(i) for i in range(c.count)) if c.mode == "assign"
                   else (),
                   committed=tuple(reader_name(i) for i in range(c.count)
                                   if c.judged_isolation(i) == "read_committed"),
                   copy_topic=copy_topic(scenario.topic.name) if scenario.workload == "eos-copy"
                   else "")


def _records(result: RunResult) -> int:
    """How much of a history a result was judged on: its sends and reads."""
    m = result.metrics
    return m.acked + m.failed + m.indeterminate + m.reads


def _earlier(run_dir: Path) -> RunResult | None:
    """The result an earlier check of this run wrote, if this version can read it."""
    try:
        return RunResult.load(run_dir / "results.json")
    except (OSError, ValueError):
        return None


def _refuse_emptier(result: RunResult, before: RunResult | None, run_dir: Path) -> None:
    """Raise rather than replace a run's report with one judged on less of its history than the
    report there."""
    if before and before.metrics and _records(result) < _records(before):
        raise UsageError(f"{run_dir}: its history now holds {_records(result):,} sends and reads, "
                         f"its report was judged on {_records(before):,}; the report is left as it "
                         "was (analyze a copy of the run directory to see the new result)")


def check(scenario: Scenario, run_dir: Path, master: str | None = None,
          say: Callable[[str], None] = lambda m: None) -> Outcome:
    """Analyze a run directory, judge it against the guarantee model, write results.json and
    report.html; `say` hears each phase begin."""
    history, started = run_dir / "history", time.monotonic()
    say("starting Spark")
    spark = spark_session(master, large=is_large(history))
    say("analyzing the history")
    a = analyze(spark, history, readers_of(scenario))
    say("judging it and writing the report")
    v = verdict(scenario, a)
    t0 = a.series["t0"]
    before = _earlier(run_dir)
    identity = _identity(scenario, run_dir)
    identity["durations"] = before.durations if before else identity["durations"].model_copy(
        update={"analysis_s": round(time.monotonic() - started, 1)})
    result = RunResult(
        **identity, verdict=v.valid, known_bug=v.known_bug, caught=v.caught, forbidden=v.forbidden,
        allowed_seen=v.allowed_seen, missing_expect=v.missing_expect,
                       unknown_because=v.unknown_because,
        liveness="; ".join(a.facts.liveness),
        counts=a.counts(),
                       examples={k: [in_seconds(e, t0) for e in x.examples] for k,
                                 x in a.anomalies.items()},
        spans={k: Span(partitions=x.span["partitions"],
                       first_s=round((x.span["t_first"] - t0) / 1e9, 1),
                       last_s=round((x.span["t_last"] - t0) / 1e9, 1))
               for k, x in a.anomalies.items() if x.span and x.span.get("t_first") is not None},
        rules=guarantees.rules(scenario), metrics=Metrics.model_validate(a.metrics), facts=a.facts)
    _refuse_emptier(result, before, run_dir)
    result.save(run_dir)
    render.write_report(result, a.series, run_dir)
    if spark_jvm.OUTPUT:
        spark_jvm.OUTPUT.take(run_dir / "logs" / "spark.log")
    return Outcome(result, a, run_dir)


def harness_error(scenario: Scenario, run_dir: Path, exc: Exception, elapsed_s: float) -> RunResult:
    """The result of a run the harness could not complete: verdict unknown, the error named."""
    return RunResult(**(_identity(scenario, run_dir)
                        | {"status": "error", "durations": Durations(run_s=elapsed_s)}),
                     verdict=None, error=f"{type(exc).__name__}: {exc}",
                     unknown_because=["the harness could not complete the run "
                                      f"({type(exc).__name__})"])


def run_and_check(scenario: Scenario, root: Path, on_tick=lambda t: None, ops=None,
                  master: str | None = None, keep_going: bool = False) -> Outcome:
    """Execute a scenario into runs/<name>/<stamp>-<seed>/ and check it. With `keep_going`, a run
    the harness could not complete (a broker that never came up, a fault that did not take effect)
    ends as a failed result naming the error instead of raising, so a suite goes on to its next
    scenario; bad input or a missing Docker engine still raise, and so does any error once a signal
    is ending the command: raised while the run cleaned up after the signal, it stands in for the
    signal's SystemExit, and a suite must not go on."""
    run_dir = run_dir_for(root, scenario)
    started = time.monotonic()
    warming: list[threading.Thread | None] = []

    # the Spark JVM starts once the brokers' JVMs have: together they took 2x longer
    def tick(t: Tick) -> None:
        if t.phase == "faults" and not warming:
            warming.append(warm_spark(master))
        on_tick(t)

    try:
        ChaosRun(scenario, run_dir, tick, ops).execute()
    except Exception as exc:
        if not keep_going or signals.SIGNALLED or isinstance(
                exc, UsageError | EngineError | ImageError):
            raise
        # the error may have come before the run wrote anything
        run_dir.mkdir(parents=True, exist_ok=True)
        result = harness_error(scenario, run_dir, exc, round(time.monotonic() - started, 1))
        result.save(run_dir)
        return Outcome(result, None, run_dir)
    finally:
        on_tick(Tick("analysis"))
    # a short run's warm-up may still go on: sharing 2 cores helps neither
    for thread in filter(None, warming):
        thread.join(WARM_UP_WAIT_S)
    return check(scenario, run_dir, master)
