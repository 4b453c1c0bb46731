"""One chaos run, phase by phase, into a run directory: set-up (image, cluster, topics, clients),
the workload under the nemesis, heal, drain and dump, teardown. The history stays readable whatever
happens."""

from __future__ import annotations

import concurrent.futures as cf
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from contracts import signals
from contracts.errors import ClusterError
from contracts.faultkinds import FAULT_KINDS
from contracts.history import Event, HistoryWriter, Retention
from contracts.payload import record_bytes_max
from contracts.scenario import Scenario, copy_topic
from faults import plan, schedule
from faults.ports import Clients
from harness import engine, images
from harness.broker_config import ClusterSpec
from harness.cluster import Cluster
from harness.container_log import self_exits
from harness.jars import fetch_jars
from runloop import clients as client_loop
from runloop import share
from runloop.clients import INTERRUPTED_WAIT_S
from runloop.info import RunInfo
from runloop.progress import Tick
from workloads.consumer import record_committed
from workloads.copier import record_copied, wait_copied
from workloads.drain import final_drain
from workloads.sampler import MemorySampler, MetadataSampler, TierSampler


class ChaosRun:
    """A scenario's run: each phase is a method, run.json records each one's time as the run goes,
    and every container is removed whatever happens."""

    def __init__(self, scenario: Scenario, run_dir: Path,
                 on_tick: Callable[[Tick], None] = lambda t: None,
                 ops: list[plan.PlannedOp] | None = None) -> None:
        self.scenario, self.run_dir, self.on_tick = scenario, run_dir, on_tick
        self.ops = ops if ops is not None else plan.plan(
            scenario.faults, scenario.duration, scenario.seed)
        self.info = RunInfo(scenario.name, scenario.seed, scenario.kafka.version)
        self.history: HistoryWriter | None = None
        self.cluster: Cluster | None = None
        self.clients = Clients()
        self.metadata_sampler: MetadataSampler | None = None
        self.tier_sampler: TierSampler | None = None  # a run with a remote tier only
        self.memory: MemorySampler | None = None
        self._mark = time.monotonic()

    def phase(self, name: str) -> None:
        """End the current phase (its time goes to run.json) and begin `name`."""
        self.info.timings[self.info.phase] = round(time.monotonic() - self._mark, 2)
        self.info.phase, self._mark = name, time.monotonic()
        self.info.save(self.run_dir)
        self.on_tick(Tick(name))

    def execute(self) -> RunInfo:
        """Every phase in order; a failure or a signal skips to teardown, and the history is closed
        after it."""
        s, compacted = self.scenario, None
        self.run_dir.mkdir(parents=True, exist_ok=True)
        (self.run_dir / "scenario.json").write_text(s.model_dump_json(indent=1, by_alias=True))
        plan.save(self.ops, self.run_dir / "schedule.json")
        self.info.save(self.run_dir)
        self.history = HistoryWriter(self.run_dir / "history")
        try:
            self.phase("images")
            self._images()
            self.phase("cluster")
            with Cluster(cluster_spec(s)) as self.cluster:
                self._between_setup_and_teardown()
                # nothing writes to the history from here on
                compacted = _compact_meanwhile(self.history)
            self.info.status = "complete"
        except BaseException as exc:
            self.info.status = "error" if isinstance(exc, Exception) else "interrupted"
            self.info.error = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            self.phase("done")
            if compacted:
                with signals.deferred():  # as a compaction in this thread would
                    compacted.result()
            else:
                self.history.close()
            self.info.save(self.run_dir)
        return self.info

    def _images(self) -> None:
        """The cluster's image, and the jars of a release an upgrade rolls to, fetched before any
        container starts."""
        def say(message: str) -> None:
            self.on_tick(Tick("images", faults=message))
        images.ensure_kafka_image(self.scenario.kafka.version, say=say)
        for f in self.scenario.faults:
            if f.to is not None:
                fetch_jars(f.to, say=say)

    def _between_setup_and_teardown(self) -> None:
        """Topics and clients, the workload, heal, drain and dump. On a failure or a signal the
        clients are stopped and nothing is healed, drained or dumped: the cluster is removed
        next."""
        self.phase("topic")
        self._setup()
        try:
            self._workload()
            self._heal()
            self._drain_and_dump()
        except BaseException as exc:
            self._engine_evidence(str(exc))
            client_loop.stop(client_loop.everyone(self.clients), INTERRUPTED_WAIT_S)
            raise
        self.phase("teardown")

    def _setup(self) -> None:
        """Every topic of the run, the metadata sampler, the clients, then the sampler of their
        memory."""
        s, cluster, history = self.scenario, self.cluster, self.history
        topics = _all_topics(s)
        for name in topics:
            cluster.metadata.create_topic(name, s.topic.partitions, s.topic.replication_factor,
                                          s.topic.settings(), replicas=s.topic.replicas)
            self._record_retention(name)
        self.metadata_sampler = MetadataSampler(topics, cluster.metadata.partitions_of,
                                                cluster.metadata.controller, history).start()
        if (tier := cluster.tier) is not None:
            partitions = s.topic.partitions
            self.tier_sampler = TierSampler(
                lambda: tier.segments(set(topics)),
                lambda: cluster.metadata.log_starts(topics, partitions), history).start()
        if s.workload == "share":
            share.configure(s, cluster)
        self.clients = client_loop.start(s, cluster.bootstrap_servers(), history)
        everyone = client_loop.everyone(self.clients)
        # pids only: polling a child from this thread could race the main thread for its exit code
        # (a hung client's 75)
        self.memory = MemorySampler(lambda: {c.name: c.pid for c in everyone if c.pid},
                                    history).start()

    def _record_retention(self, topic: str) -> None:
        """The topic's retention as its brokers apply it, and a bound on a record's bytes: what
        the retention-breach check needs."""
        applied = self.cluster.metadata.topic_settings(topic, ("retention.ms", "retention.bytes"))
        p = self.scenario.producer
        kept = Retention(int(applied["retention.ms"]), int(applied["retention.bytes"]),
                         record_bytes_max(p.payload_bytes, p.keyed))
        self.history.event("runner", Event.TOPIC_CONFIG, topic=topic, detail=kept.detail())

    def _workload(self) -> None:
        """The workload under the schedule's faults for the scenario's duration; the producers are
        then told to stop, and the nemesis ends its ops (early on an interrupt, and every planned op
        gets its row)."""
        s, producers = self.scenario, self.clients.producers
        # the schedule counts from the first sends, and from every share member's first records
        client_loop.require_ready(producers, "did not start")
        if s.workload == "share":
            share.wait_handed(self.clients.consumers, self.history)
        nemesis = schedule.Nemesis(self.cluster, s.topic.name, s.faults, self.ops, s.seed,
                                   self.history, self.clients, self._engine_evidence).start()
        try:
            self.phase("faults")
            end = time.monotonic() + s.duration
            while (left := end - time.monotonic()) > 0:
                time.sleep(min(1.0, left))
                client_loop.restart_hung(self.clients, self.history)
                self.on_tick(Tick("faults", s.duration - left, max(left, 0),
                                  sum(p.acked for p in producers), sum(p.errors for p in producers),
                                  nemesis.active))
        finally:
            for p in producers:
                p.stop()
            nemesis.stop(INTERRUPTED_WAIT_S if sys.exc_info()[0] else schedule.STOP_WAIT_S)
            self.info.nemesis_errors = nemesis.errors
        self.memory.workload_over()

    def _heal(self) -> None:
        """Heal every fault, let the producers settle, and let an eos-copy stage catch up and record
        its offsets."""
        s, history, boot = self.scenario, self.history, self.cluster.bootstrap_servers()
        self.phase("heal")
        self.info.recovered = schedule.heal_all(self.cluster, s.topic.name, history,
                                                s.recovery_timeout)
        for p in self.clients.producers:
            p.join()
        if not self.clients.copiers:
            return
        self.phase("copiers")
        topic, parts, group = s.topic.name, s.topic.partitions, s.copier.group
        wait_copied(boot, group, topic, parts, s.drain_timeout,
                    lambda: client_loop.restart_hung(self.clients, history))
        client_loop.stop(self.clients.copiers)
        record_copied(boot, group, topic, parts, history)

    def _drain_and_dump(self) -> None:
        """Drain every partition to its end and dump every replica, while the consumers catch up and
        leave their group (the drain and the dump need only the producers stopped); then record the
        group's commits, or drain the share group and record its state, and keep the brokers'
        logs."""
        s, history, boot = self.scenario, self.history, self.cluster.bootstrap_servers()
        stopping = threading.Thread(target=client_loop.stop_consumers,
                                    args=(self.clients.consumers,), name="stop-consumers")
        stopping.start()
        try:
            self.phase("drain")
            self._drain(boot)
            samplers = (self.metadata_sampler, self.tier_sampler, self.memory)
            client_loop.stop([w for w in samplers if w is not None], 15)
            self.phase("replicas")
            for t in s.topics():
                _dump_replicas(self.cluster, t, history)
        finally:
            self.phase("consumers")
            stopping.join()
        if s.workload == "share":
            self.phase("share-drain")
            share.drain(s, boot, history)
        elif self.clients.consumers and s.consumer.mode == "subscribe":
            for t in s.topics():
                record_committed(boot, s.consumer.group, t, s.topic.partitions, self.history)
        self.cluster.collect_logs(self.run_dir / "logs")
        self._record_self_exits()

    def _record_self_exits(self) -> None:
        """The lines of the kept logs where Kafka ended a node's process itself: history events and
        run.json, so a fault op that found its node gone points at Kafka, not the harness."""
        for log in sorted((self.run_dir / "logs").glob("*.log")):
            for line in self_exits(log.read_text(errors="replace")):
                self.info.node_exits.append(f"{log.stem}: {line}")
                self.history.event("runner", Event.NODE_EXIT, detail=f"{log.stem}: {line}")

    def _drain(self, boot: str) -> None:
        """The workload's topics as written; an eos-copy output as its users read it
        (read_committed)."""
        s, topic = self.scenario, self.scenario.topic.name
        drains = [*((t, "read_uncommitted") for t in s.topics()),
                  *([(copy_topic(topic), "read_committed")] if self.clients.copiers else [])]
        for t, isolation in drains:
            reached = final_drain(boot, t, s.topic.partitions, self.history, s.drain_timeout,
                                  isolation)
            named = {p: str(p) if t == topic else f"{t}/{p}" for p in reached}
            self.info.drain_reached |= {named[p]: r for p, r in reached.items()}

    def _engine_evidence(self, error: str) -> None:
        """When an engine call never came back, keep the engine's goroutine stacks beside the run,
        while it is stuck (run.json names them at its next save)."""
        if self.info.engine_stacks or not engine.stalled(error):
            return
        if path := engine.dump_stacks(self.run_dir):
            self.info.engine_stacks = path.name


def cluster_spec(scenario: Scenario) -> ClusterSpec:
    """The cluster a scenario runs on: its Kafka settings, and the disk and network tools its fault
    kinds need."""
    k = scenario.kafka
    kinds = [FAULT_KINDS[kind] for f in scenario.faults for kind in f.fired_kinds()]
    config = (scenario.share.broker_config() if scenario.workload == "share" else {}) | (
        k.broker_config())
    return ClusterSpec(k.version, k.brokers, k.mode, config, k.per_broker_config(),
                       any(x.lazy_disk for x in kinds), any(x.net_delay for x in kinds),
                       scenario.topic.remote_storage, any(x.lazy_tier for x in kinds),
                       dynamic_quorum=any(x.dynamic_quorum for x in kinds))


def _compact_meanwhile(history: HistoryWriter) -> cf.Future:
    """Close and compact the history on a thread of its own, beside the cluster's teardown (a signal
    lands in the main thread, and the compaction goes on to its end)."""
    pool = cf.ThreadPoolExecutor(1, thread_name_prefix="history-compaction")
    compacted = pool.submit(history.close)
    pool.shutdown(wait=False)
    return compacted


def _dump_replicas(cluster: Cluster, topic: str, history: HistoryWriter) -> None:
    """Every replica's records into `replicas`; without them the verdict is unknown, not lost (an
    event says so)."""
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
    return (*scenario.topics(),
            *([copy_topic(scenario.topic.name)] if scenario.workload == "eos-copy" else []))
