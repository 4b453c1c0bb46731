"""One chaos run: image, cluster, topic, workloads, nemesis, heal, final drain, replica dump; all into a run dir."""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from contracts.errors import ClusterError
from contracts.history import Event, HistoryWriter, now_ns
from contracts.scenario import Scenario
from faults import schedule
from harness import images
from harness.broker_config import ClusterSpec
from harness.cluster import Cluster
from workloads.client_process import ClientProcess
from workloads.consumer import record_committed
from workloads.drain import final_drain
from workloads.sampler import MetadataSampler


@dataclass
class Tick:
    """What the progress display shows."""

    phase: str
    elapsed: float = 0.0
    remaining: float = 0.0
    acked: int = 0
    errors: int = 0
    faults: str = ""


@dataclass
class RunInfo:
    """Written to run.json: how far the run got and what it could not establish."""

    scenario: str
    seed: int
    kafka: str
    status: str = "running"
    phase: str = "start"
    started_utc: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    t0_ns: int = field(default_factory=now_ns)
    timings: dict[str, float] = field(default_factory=dict)
    recovered: bool | None = None
    drain_reached: dict[str, bool] = field(default_factory=dict)
    nemesis_errors: list[str] = field(default_factory=list)
    error: str = ""

    @classmethod
    def load(cls, run_dir: Path) -> RunInfo | None:
        """A run directory's run.json (None where there is none: a history built by hand)."""
        path = run_dir / "run.json"
        return cls(**json.loads(path.read_text())) if path.exists() else None

    def save(self, run_dir: Path) -> None:
        """Write run.json atomically."""
        tmp = run_dir / ".run.json.tmp"
        tmp.write_text(json.dumps(self.__dict__, indent=1))
        tmp.replace(run_dir / "run.json")


def run_dir_for(root: Path, scenario: Scenario) -> Path:
    """runs/<scenario>/<utc-timestamp>-<seed>/"""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return root / scenario.name / f"{stamp}-{scenario.seed}"


def execute(scenario: Scenario, run_dir: Path, on_tick: Callable[[Tick], None] = lambda t: None,
            ops: list[schedule.PlannedOp] | None = None) -> RunInfo:
    """Run a scenario end to end; the history stays readable whatever happens, and every container is removed."""
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "scenario.json").write_text(scenario.model_dump_json(indent=1, by_alias=True))
    ops = ops if ops is not None else schedule.plan(scenario.faults, scenario.duration, scenario.seed)
    schedule.save(ops, run_dir / "schedule.json")
    info = RunInfo(scenario.name, scenario.seed, scenario.kafka.version)
    info.save(run_dir)
    history = HistoryWriter(run_dir / "history")
    mark = time.monotonic()

    def phase(name: str) -> None:
        nonlocal mark
        info.timings[info.phase] = round(time.monotonic() - mark, 2)
        info.phase, mark = name, time.monotonic()
        info.save(run_dir)
        on_tick(Tick(name))

    try:
        phase("images")
        images.ensure_kafka_image(scenario.kafka.version, say=lambda m: on_tick(Tick("images", faults=m)))
        phase("cluster")
        spec = ClusterSpec(scenario.kafka.version, scenario.kafka.brokers, scenario.kafka.metadata,
                           scenario.kafka.broker_config())
        with Cluster(spec) as cluster:
            _workload(scenario, cluster, history, ops, info, phase, on_tick, run_dir)
        info.status = "complete"
    except BaseException as exc:
        info.status = "error" if isinstance(exc, Exception) else "interrupted"
        info.error = f"{type(exc).__name__}: {exc}"
        raise
    finally:
        phase("done")
        history.close()
        info.save(run_dir)
    return info


CLIENT_START_S = 60.0
CATCH_UP_S = 2.0  # how long live consumers read the healed log before they stop


def _stop_consumers(consumers: list[ClientProcess]) -> None:
    """Let live consumers catch up to the healed log, then stop them: each commits and leaves its group."""
    time.sleep(CATCH_UP_S)
    for c in consumers:
        c.stop()
    for c in consumers:
        c.join(30)


def _dump_replicas(cluster: Cluster, topic: str, history: HistoryWriter) -> None:
    """Every replica's records into `replicas`; without them the verdict is unknown, not lost (an event says so)."""
    try:
        history.write_many("replicas", cluster.dump_replica_logs(topic))
        history.event("runner", Event.REPLICAS_DUMPED, topic=topic)
    except ClusterError as exc:
        history.event("runner", Event.REPLICAS_FAILED, topic=topic, detail=str(exc))


def _workload(scenario: Scenario, cluster: Cluster, history: HistoryWriter, ops, info: RunInfo,
              phase: Callable[[str], None], on_tick: Callable[[Tick], None], run_dir: Path) -> None:
    topic, parts = scenario.topic.name, scenario.topic.partitions
    phase("topic")
    cluster.metadata.create_topic(topic, parts, scenario.topic.replication_factor, scenario.topic_config(),
                                  replicas=scenario.topic.replicas)
    sampler = MetadataSampler(topic, lambda: cluster.metadata.partitions(topic), cluster.metadata.controller,
                              history).start()
    boot = cluster.bootstrap_servers()
    consumers = [ClientProcess("consumer", i, scenario.consumer, topic, parts, boot, history.dir).start()
                 for i in range(scenario.consumer.count)]
    producers = [ClientProcess("producer", i, scenario.producer, topic, parts, boot, history.dir).start()
                 for i in range(scenario.producer.count)]
    try:
        # the schedule's `after` counts from the first sends, not from a spawning interpreter
        late = [p.cid for p in producers if not p.wait_ready(CLIENT_START_S)]
        if late:
            raise RuntimeError(f"producers {late} did not start within {CLIENT_START_S:.0f} s")
        nemesis = schedule.Nemesis(cluster, topic, scenario.faults, ops, scenario.seed, history, consumers,
                                   scenario.consumer.group, producers).start()
        try:
            _faults(scenario, producers, nemesis, phase, on_tick)
        finally:  # on an interrupt too: the ops heal early and every planned op gets its row
            for p in producers:
                p.stop()
            nemesis.stop(INTERRUPTED_WAIT_S if sys.exc_info()[0] else schedule.STOP_WAIT_S)
            info.nemesis_errors = nemesis.errors
        _settle(scenario, cluster, history, info, producers, consumers, sampler, phase, run_dir)
    except BaseException:  # an interrupt or a failure: no heal, drain or dump; the cluster is removed next
        for client in (*producers, *consumers):
            client.stop()
        for client in (*producers, *consumers):
            client.join(INTERRUPTED_WAIT_S)
        raise
    phase("teardown")


INTERRUPTED_WAIT_S = 5.0  # how long an interrupted run waits for a client or a fault op to end


def _faults(scenario: Scenario, producers: list[ClientProcess], nemesis: schedule.Nemesis,
            phase: Callable[[str], None], on_tick: Callable[[Tick], None]) -> None:
    """The workload under the schedule's faults, for the scenario's duration."""
    phase("faults")
    end = time.monotonic() + scenario.duration
    while (left := end - time.monotonic()) > 0:
        time.sleep(min(1.0, left))
        on_tick(Tick("faults", scenario.duration - left, max(left, 0), sum(p.acked for p in producers),
                     sum(p.errors for p in producers), nemesis.active))


def _settle(scenario: Scenario, cluster: Cluster, history: HistoryWriter, info: RunInfo,
            producers: list[ClientProcess], consumers: list[ClientProcess], sampler: MetadataSampler,
            phase: Callable[[str], None], run_dir: Path) -> None:
    """The final generator, the producers told to stop: heal, let them settle, drain every partition to its end,
    dump every replica, and stop the consumers (they catch up and leave their group meanwhile)."""
    topic, parts, boot = scenario.topic.name, scenario.topic.partitions, cluster.bootstrap_servers()
    phase("heal")
    info.recovered = schedule.heal_all(cluster, topic, history, scenario.recovery_timeout)
    for p in producers:
        p.join()
    stopping = threading.Thread(target=_stop_consumers, args=(consumers,), name="stop-consumers")
    stopping.start()  # the drain and the replica dump need only the producers stopped
    try:
        phase("drain")
        reached = final_drain(boot, topic, parts, history, scenario.drain_timeout)
        info.drain_reached = {str(p): r for p, r in reached.items()}
        sampler.stop()
        sampler.join(15)
        phase("replicas")
        _dump_replicas(cluster, topic, history)
        cluster.collect_logs(run_dir / "logs")
    finally:
        phase("consumers")
        stopping.join()
    if consumers and scenario.consumer.mode == "subscribe":
        record_committed(boot, scenario.consumer.group, topic, parts, history)
