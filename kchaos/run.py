"""One chaos run: image, cluster, topic, workloads, nemesis, heal, final drain, replica dump; all into a run dir."""

from __future__ import annotations

import concurrent.futures as cf
import json
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from contracts.errors import ClusterError
from contracts.faultkinds import FAULT_KINDS
from contracts.history import Event, HistoryWriter, now_ns, signals_deferred
from contracts.scenario import Scenario, copier_id, copy_topic, transactional_id
from faults import plan, schedule
from faults.ports import Clients
from harness import engine, images
from harness.broker_config import ClusterSpec
from harness.cluster import Cluster
from kchaos.console import Tick
from workloads.client_process import ClientProcess
from workloads.consumer import record_committed
from workloads.copier import record_copied, wait_copied
from workloads.drain import final_drain
from workloads.sampler import MemorySampler, MetadataSampler
from workloads.worker import Worker


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
    engine_stacks: str = ""  # the Docker engine's goroutine stacks, taken when one of its calls never came back

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
            ops: list[plan.PlannedOp] | None = None) -> RunInfo:
    """Run a scenario end to end; the history stays readable whatever happens, and every container is removed."""
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "scenario.json").write_text(scenario.model_dump_json(indent=1, by_alias=True))
    ops = ops if ops is not None else plan.plan(scenario.faults, scenario.duration, scenario.seed)
    plan.save(ops, run_dir / "schedule.json")
    info = RunInfo(scenario.name, scenario.seed, scenario.kafka.version)
    info.save(run_dir)
    history = HistoryWriter(run_dir / "history")
    compacted: cf.Future | None = None
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
        kinds = [FAULT_KINDS[k] for f in scenario.faults for k in f.fired_kinds()]
        spec = ClusterSpec(scenario.kafka.version, scenario.kafka.brokers, scenario.kafka.mode,
                           scenario.kafka.broker_config(), scenario.kafka.per_broker_config(),
                           any(k.lazy_disk for k in kinds), any(k.net_delay for k in kinds))
        with Cluster(spec) as cluster:
            _workload(scenario, cluster, history, ops, info, phase, on_tick, run_dir)
            compacted = _compact_meanwhile(history)  # nothing writes to the history once the workload is over
        info.status = "complete"
    except BaseException as exc:
        info.status = "error" if isinstance(exc, Exception) else "interrupted"
        info.error = f"{type(exc).__name__}: {exc}"
        raise
    finally:
        phase("done")
        if compacted:
            with signals_deferred():  # as a compaction in this thread would
                compacted.result()
        else:
            history.close()
        info.save(run_dir)
    return info


def _compact_meanwhile(history: HistoryWriter) -> cf.Future:
    """Close and compact the history on a thread of its own, beside the cluster's teardown (a signal lands in the
    main thread, and the compaction goes on to its end)."""
    pool = cf.ThreadPoolExecutor(1, thread_name_prefix="history-compaction")
    compacted = pool.submit(history.close)
    pool.shutdown(wait=False)
    return compacted


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
        def sink(lines: list[bytes]) -> None:
            history.write_lines("replicas", lines)
            history.flush()

        cluster.dump_replica_logs(topic, sink)
        history.event("runner", Event.REPLICAS_DUMPED, topic=topic)
    except ClusterError as exc:
        history.event("runner", Event.REPLICAS_FAILED, topic=topic, detail=str(exc))


def _all_topics(scenario: Scenario) -> tuple[str, ...]:
    """The workload's topics, and for eos-copy its output topic."""
    return (*scenario.topics(), *([copy_topic(scenario.topic.name)] if scenario.workload == "eos-copy" else []))


def _create_topics(scenario: Scenario, cluster: Cluster) -> None:
    """Every topic of the run, alike."""
    t = scenario.topic
    for name in _all_topics(scenario):
        cluster.metadata.create_topic(name, t.partitions, t.replication_factor, scenario.topic_config(),
                                      replicas=t.replicas)


def _require_ready(processes: list[ClientProcess], not_ready: str,
                   before_raising: Callable[[], object] | None = None) -> None:
    """Wait up to CLIENT_START_S for each client process to report ready; raise naming those that did not."""
    late = [c.cid for c in processes if not c.wait_ready(CLIENT_START_S)]
    if late:
        if before_raising:
            before_raising()
        raise RuntimeError(f"{processes[0].kind}s {late} {not_ready} within {CLIENT_START_S:.0f} s")


def _clients(scenario: Scenario, boot: str, history: HistoryWriter) -> Clients:
    """Start the workload's client processes: consumers, copiers (eos-copy), producers (with `consumer.reset:
    latest`, once every consumer has its first assignment)."""
    topics, parts, copying = scenario.topics(), scenario.topic.partitions, scenario.workload == "eos-copy"

    def start(kind, spec, n: int) -> list[ClientProcess]:
        return [ClientProcess(kind, i, spec, topics, parts, boot, history.dir).start() for i in range(n)]
    consumers = start("consumer", scenario.consumer, scenario.consumer.count)
    if scenario.consumer.reset == "latest":  # a member starting at the end would skip what came before it joined
        _require_ready(consumers, "had no assignment", lambda: [c.kill() for c in consumers])
    copiers = start("copier", scenario.copier, scenario.copier.count if copying else 0)
    return Clients(consumers, start("producer", scenario.producer, scenario.producer.count), copiers,
                   scenario.copier.group if copying else scenario.consumer.group,
                   copier_id(0) if copying else transactional_id(0))


def _workload(scenario: Scenario, cluster: Cluster, history: HistoryWriter, ops, info: RunInfo,
              phase: Callable[[str], None], on_tick: Callable[[Tick], None], run_dir: Path) -> None:
    topic = scenario.topic.name
    phase("topic")
    _create_topics(scenario, cluster)
    sampler = MetadataSampler(_all_topics(scenario), cluster.metadata.partitions_of, cluster.metadata.controller,
                              history).start()
    clients = _clients(scenario, cluster.bootstrap_servers(), history)
    producers, everyone = clients.producers, (*clients.producers, *clients.copiers, *clients.consumers)
    # pids only: polling a child from this thread could race the main thread for its exit code (a hung client's 75)
    memory = MemorySampler(lambda: {c.name: c.pid for c in everyone if c.pid}, history).start()
    try:
        # the schedule's `after` counts from the first sends, not from a spawning interpreter
        _require_ready(producers, "did not start")
        nemesis = schedule.Nemesis(cluster, topic, scenario.faults, ops, scenario.seed, history, clients,
                                   lambda error: _engine_evidence(info, run_dir, error)).start()
        try:
            _faults(scenario, clients, history, nemesis, phase, on_tick)
        finally:  # on an interrupt too: the ops heal early and every planned op gets its row
            for p in producers:
                p.stop()
            nemesis.stop(INTERRUPTED_WAIT_S if sys.exc_info()[0] else schedule.STOP_WAIT_S)
            info.nemesis_errors = nemesis.errors
        memory.workload_over()
        _settle(scenario, cluster, history, info, clients, (sampler, memory), phase, run_dir)
    except BaseException as exc:  # an interrupt or a failure: no heal, drain or dump; the cluster is removed next
        _engine_evidence(info, run_dir, str(exc))
        for client in everyone:
            client.stop()
        for client in everyone:
            client.join(INTERRUPTED_WAIT_S)
        raise
    phase("teardown")


INTERRUPTED_WAIT_S = 5.0  # how long an interrupted run waits for a client or a fault op to end


def _engine_evidence(info: RunInfo, run_dir: Path, error: str) -> None:
    """When an engine call never came back, keep the engine's goroutine stacks beside the run, while it is stuck
    (run.json names them at its next save)."""
    if not info.engine_stacks and engine.stalled(error) and (path := engine.dump_stacks(run_dir)):
        info.engine_stacks = path.name


def _restart_hung(clients: Clients, history: HistoryWriter) -> bool:
    """Restart the client processes that ended themselves on a hung call, as an application's supervisor would;
    True if any was."""
    hung = [c for c in (*clients.producers, *clients.copiers, *clients.consumers) if c.hung]
    for c in hung:
        c.start()
        history.event(f"{c.kind}-{c.cid}", Event.RECREATED, detail="its process was restarted after a hung call")
    return bool(hung)


def _faults(scenario: Scenario, clients: Clients, history: HistoryWriter, nemesis: schedule.Nemesis,
            phase: Callable[[str], None], on_tick: Callable[[Tick], None]) -> None:
    """The workload under the schedule's faults, for the scenario's duration."""
    phase("faults")
    producers = clients.producers
    end = time.monotonic() + scenario.duration
    while (left := end - time.monotonic()) > 0:
        time.sleep(min(1.0, left))
        _restart_hung(clients, history)
        on_tick(Tick("faults", scenario.duration - left, max(left, 0), sum(p.acked for p in producers),
                     sum(p.errors for p in producers), nemesis.active))


def _copy_settle(scenario: Scenario, boot: str, history: HistoryWriter, clients: Clients,
                 phase: Callable[[str], None]) -> None:
    """The eos-copy stage catches up with the input, stops, and its final committed offsets are recorded."""
    topic, parts, group = scenario.topic.name, scenario.topic.partitions, scenario.copier.group
    copiers = clients.copiers
    phase("copiers")
    wait_copied(boot, group, topic, parts, scenario.drain_timeout, lambda: _restart_hung(clients, history))
    for c in copiers:
        c.stop()
    for c in copiers:
        c.join()
    record_copied(boot, group, topic, parts, history)


def _settle(scenario: Scenario, cluster: Cluster, history: HistoryWriter, info: RunInfo, clients: Clients,
            samplers: tuple[Worker, ...], phase: Callable[[str], None], run_dir: Path) -> None:
    """The final generator, the producers told to stop: heal, let them settle, let an eos-copy stage catch up,
    drain every partition to its end, dump every replica, and stop the consumers (they catch up and leave their
    group meanwhile)."""
    topic, parts, boot = scenario.topic.name, scenario.topic.partitions, cluster.bootstrap_servers()
    phase("heal")
    info.recovered = schedule.heal_all(cluster, topic, history, scenario.recovery_timeout)
    for p in clients.producers:
        p.join()
    if clients.copiers:
        _copy_settle(scenario, boot, history, clients, phase)
    stopping = threading.Thread(target=_stop_consumers, args=(clients.consumers,), name="stop-consumers")
    stopping.start()  # the drain and the replica dump need only the producers stopped
    try:
        phase("drain")
        # the workload's topics as written; an eos-copy output as its users read it
        drains = [*((t, "read_uncommitted") for t in scenario.topics()),
                  *([(copy_topic(topic), "read_committed")] if clients.copiers else [])]
        for t, isolation in drains:
            reached = final_drain(boot, t, parts, history, scenario.drain_timeout, isolation)
            info.drain_reached |= {str(p) if t == topic else f"{t}/{p}": r for p, r in reached.items()}
        for sampler in samplers:
            sampler.stop()
        for sampler in samplers:
            sampler.join(15)
        phase("replicas")
        for t in scenario.topics():
            _dump_replicas(cluster, t, history)
        cluster.collect_logs(run_dir / "logs")
    finally:
        phase("consumers")
        stopping.join()
    if clients.consumers and scenario.consumer.mode == "subscribe":
        for t in scenario.topics():
            record_committed(boot, scenario.consumer.group, t, parts, history)
