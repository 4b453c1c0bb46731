"""A real Kafka cluster of N brokers on a private Docker network: its lifecycle. Broker settings,
network rules and metadata queries live in broker_config, firewall and metadata."""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import itertools
import subprocess
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from testcontainers.core.config import testcontainers_config
from testcontainers.core.network import Network

from contracts import measured, signals
from contracts.errors import ClusterError
from harness import (
    images,
    jars,
    labels,
    lazydisk,
    migration,
    netdelay,
    quorum,
    releases,
    remote_tier,
    watchdog,
)
from harness.broker_config import (
    ZK_PORT,
    ZOOKEEPER_PROPERTIES,
    ClusterSpec,
    broker_properties,
    cluster_id,
    free_port,
)
from harness.firewall import Firewall
from harness.metadata import SETTLING_EVERY_S, Metadata
from harness.node import KafkaNode
from harness.replicas import Parsed, Segment, node_segments, parse_segment
from harness.zookeeper import ZooKeeper

# how far past a killed broker's unloaded session expiry its registration is waited for
ZK_LATE_S = 30.0
ROWS_AT_ONCE = 50_000  # replica rows handed to the history at a time


class Cluster:
    """N brokers (KRaft combined mode by default, or ZooKeeper mode for 3.x) on one private network;
    `firewall` holds its network rules and `metadata` answers who leads, who is in sync and who
    controls."""

    def __init__(self, spec: ClusterSpec) -> None:
        spec.validate()
        self.spec = spec
        self.image = images.image_for(spec.version)
        self.cluster_id = cluster_id()
        self.network: Network | None = None
        self._network_up = False
        self.nodes: list[KafkaNode] = []
        self.zookeeper: KafkaNode | None = None
        self.controllers: list[KafkaNode] = []  # a dedicated KRaft quorum (a migration's)
        self.migration = migration.Migration(self)
        self.quorum = quorum.Quorum(spec, lambda: self.nodes) if spec.dynamic_quorum else None
        self.firewall = Firewall(lambda: [*self.nodes, *self.controllers], lambda: self.zookeeper)
        self.metadata = Metadata(spec, lambda: self.nodes, self.firewall, self.voters,
                                 self.zookeeper_session)
        self._signals = contextlib.ExitStack()  # the signal policy while the cluster is up
        self._watchdog: subprocess.Popen | None = None
        self.tier: remote_tier.SharedTier | None = None  # the remote tier the brokers share
        self._power_cut: set[int] = set()  # brokers that lost power and have not been started since
        # the Kafka release each broker runs (an upgrade rolls them from spec.version)
        self.releases = dict.fromkeys(range(1, spec.brokers + 1), spec.version)
        # calls that create something in the engine run here, so a signal interrupts the wait, never
        # the call
        self._engine_calls = cf.ThreadPoolExecutor(1, thread_name_prefix="engine-call")

    # -- lifecycle
    # ----------------------------------------------------------------------------------------
    def __enter__(self) -> Cluster:
        self._signals.enter_context(signals.handled(unless_caller=True))
        try:
            self.start()
        except BaseException as exc:
            self._stop_after(exc)
            raise
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self._stop_after(exc)

    def _stop_after(self, exc: BaseException | None) -> None:
        """Tear down; when the run itself failed (`exc`), a teardown error is noted on that failure,
        never put in its place."""
        try:
            self.stop()
        except Exception as stop_exc:
            if exc is None:
                raise
            exc.add_note(f"teardown also failed: {type(stop_exc).__name__}: {stop_exc}")

    def start(self, timeout_s: float = 120.0) -> Cluster:
        """Create the network and every node, then wait until each broker is registered and answers
        metadata."""
        if not images.image_exists(self.image):
            raise ClusterError(f"Image {self.image} is missing; run `kchaos images build --kafka "
                               f"{self.spec.version}`")
        lazyfs = lazydisk.binary() if self.spec.lazy_disk else None
        delayer = netdelay.binary() if self.spec.net_delay else None
        plugin = jars.tiered_plugin(self.spec.version) if self.spec.tiered else None
        # no Ryuk reaper image here: the harness labels and removes its own containers
        testcontainers_config.ryuk_disabled = True
        self.network = Network(docker_network_kw={
            "labels": labels.labels(self.spec.run_id, "network"), "driver": "bridge"})
        self.network.name = f"kchaos-{self.spec.run_id}"
        # before anything exists that could be left behind
        self._watchdog = watchdog.spawn(self.spec.run_id)
        # from here `stop` removes it, once the create (perhaps in flight) has returned
        self._network_up = True
        self._in_engine(self.network.create)
        zk = self.spec.metadata == "zookeeper"
        if zk:
            self.zookeeper = self._node(0, "zookeeper").with_properties(ZOOKEEPER_PROPERTIES)
            self._in_engine(self.zookeeper.launch)
            self.zookeeper.wait_started(timeout_s)
        for i in range(1, self.spec.brokers + 1):
            node = self._node(i, "zk-broker" if zk else "kraft").with_external_port(free_port())
            node.with_properties(broker_properties(
                self.spec, i, node.alias, node.external_port or 0))
            if lazyfs:
                node.with_lazy_disk(lazyfs)
            if delayer:
                node.with_net_delay(delayer)
            if plugin:
                node.with_remote_tier(self._shared_tier().mounted, plugin)
            if self.quorum:
                node.with_env("KCHAOS_FORMAT", self.quorum.format_args(i))
            self.nodes.append(node)
        first = 1 if zk else 0
        # the first broker up takes the controller: broker 1, so that a schedule can plan around it
        if zk:
            self._in_engine(self.nodes[0].launch)
            self.nodes[0].wait_started(timeout_s)
        for node in self.nodes[first:]:
            self._in_engine(node.launch)
        for node in self.nodes:
            node.wait_started(timeout_s)
        self.wait_ready(timeout_s)
        return self

    def _shared_tier(self) -> remote_tier.SharedTier:
        """The remote tier every broker mounts (made once per cluster, on lazyfs when its faults
        need it)."""
        if self.tier is None:
            lazy = lazydisk.binary() if self.spec.lazy_tier else None
            self.tier = remote_tier.SharedTier(self.spec.run_id, lazy).start()
        return self.tier

    def _in_engine(self, call: Callable[[], object]) -> None:
        """Make a call that creates a network or container and wait for it. A signal that ends the
        run interrupts the wait; the call completes, so `stop`, which lets it finish first, removes
        what it made."""
        self._engine_calls.submit(call).result()

    def _node(self, node_id: int, role: str, cluster_id: str | None = None) -> KafkaNode:
        assert self.network is not None
        return KafkaNode(self.image, node_id, role).on(
            self.network, labels.labels(self.spec.run_id, "node"), cluster_id or self.cluster_id)

    def wait_ready(self, timeout_s: float = 120.0) -> None:
        """Every broker registered and a metadata request answered; on timeout name the missing
        brokers."""
        want = set(self.node_ids())
        seen: set[int] = set()

        def registered() -> bool:
            nonlocal seen
            seen = set(self.metadata.admin().list_topics(timeout=5).brokers)
            return seen == want

        try:
            self.metadata.wait_for("every broker registered", registered, timeout_s,
                                   SETTLING_EVERY_S)
        except ClusterError as exc:
            missing = sorted(want - seen) or sorted(want)
            tails = "\n".join(f"--- kafka-{m} ---\n{self.node(m).log_tail(15)}" for m in missing)
            raise ClusterError(f"Brokers {missing} did not register within {timeout_s:.0f}s "
                               f"(registered: {sorted(seen)}).\n{tails}") from exc

    def stop(self) -> None:
        """Remove every node (together) and the network; safe to call twice and after a failed
        start. A node that cannot be removed does not keep the others: the first such error is
        raised once everything else is gone."""
        # a create a signal interrupted the wait for has returned
        self._engine_calls.shutdown(wait=True)
        nodes = self._all_nodes()
        with cf.ThreadPoolExecutor(max_workers=len(nodes) or 1,
                                   thread_name_prefix="remove") as pool:
            removals = [pool.submit(node.remove) for node in nodes]
        errors = [e for e in (r.exception() for r in removals) if e is not None]
        if self.network is not None and self._network_up:
            # already gone is fine; labels.clean() is the fallback
            with contextlib.suppress(Exception):
                self.network.remove()
            self._network_up = False
        try:
            labels.clean(self.spec.run_id)
        except Exception as exc:
            errors.append(exc)
        finally:
            if self.tier is not None:
                self.tier.stop()
            if self._watchdog is not None:  # everything is removed: nothing left to watch over
                self._watchdog.kill()
                self._watchdog.wait()
                self._watchdog = None
            self._signals.close()
        if errors:
            raise errors[0]

    # -- nodes
    # -------------------------------------------------------------------------------------------
    def _all_nodes(self) -> list[KafkaNode]:
        return [*self.nodes, *self.controllers, *([self.zookeeper] if self.zookeeper else [])]

    def node(self, node_id: int) -> KafkaNode:
        """The broker, dedicated controller or ZooKeeper node (0) with this id."""
        for n in self._all_nodes():
            if n.node_id == node_id:
                return n
        raise ClusterError(f"No broker {node_id}; brokers are {self.node_ids()}")

    def node_ids(self) -> list[int]:
        """Every broker's id."""
        return [n.node_id for n in self.nodes]

    def voters(self) -> list[KafkaNode]:
        """The KRaft quorum: the dedicated controllers, else the brokers that are controllers too
        (a dynamic quorum's observers among them)."""
        return self.controllers or [n for n in self.nodes
                                    if n.node_id in self.spec.controller_nodes()]

    def add_controller(self, node_id: int, cluster_id: str, properties: dict[str, str]) -> None:
        """Start a dedicated KRaft controller, formatted into cluster `cluster_id` (a migration's
        quorum); `wait_started` is the caller's."""
        node = self._node(node_id, "controller", cluster_id)
        if self.spec.net_delay:
            node.with_net_delay(netdelay.binary())
        self.controllers.append(node.with_properties(properties))
        self._in_engine(node.launch)

    def zookeeper_ids(self) -> list[int]:
        """The ZooKeeper node's id (0) in ZooKeeper mode, else none."""
        return [self.zookeeper.node_id] if self.zookeeper else []

    def zookeeper_session(self) -> ZooKeeper:
        """A session with the cluster's ZooKeeper (use it as a context manager); ZooKeeper mode
        only."""
        if not self.zookeeper:
            raise ClusterError("this cluster runs KRaft: it has no ZooKeeper")
        return ZooKeeper(f"{self.zookeeper.ip()}:{ZK_PORT}")

    def bootstrap_servers(self, node_ids: Iterable[int] | None = None) -> str:
        """Host-side bootstrap list (127.0.0.1 ports), of all brokers or the ones named."""
        return self.metadata.bootstrap_servers(node_ids)

    def stopped(self) -> list[int]:
        """Brokers and dedicated controllers whose container is not running (killed or
        terminated)."""
        return [n.node_id for n in (*self.nodes, *self.controllers) if n.state() != "running"]

    def start_node(self, node_id: int) -> None:
        """Restart a stopped broker with its data, then re-apply the network rules in force for
        it."""
        self.start_nodes([node_id])

    def start_nodes(self, node_ids: Iterable[int]) -> None:
        """Restart brokers together (a KRaft voter cannot finish starting without a quorum), wait
        for each, then re-apply the network rules in force for them."""
        nodes = [self.node(i) for i in node_ids]
        began, after = time.monotonic(), "clean" if nodes and all(
            n.stopped_cleanly for n in nodes) else "kill"
        alone = not set(self.stopped()) - {n.node_id for n in nodes}
        self._await_unregistered(nodes)
        for n in nodes:
            n.begin_start()
        for n in nodes:
            n.wait_started()
            self.firewall.apply(n)
        recovering, self._power_cut = (self._power_cut & set(node_ids),
                                       self._power_cut - set(node_ids))
        # validation plans ordinary restarts of the image's release: not a power loss's recovery,
        # a rolled broker's, a migrated one's, or one beside a down node (it may await a quorum)
        if nodes and alone and not recovering and not self.controllers and all(
                self.releases[n.node_id] == self.spec.version for n in nodes):
            measured.record_restart(self.spec.version, self.spec.metadata, after,
                                    time.monotonic() - began)

    def upgrade_node(self, node_id: int, version: str) -> None:
        """An operator's rolling-upgrade step on one broker: a clean stop, another release's jars
        installed beside the image's, and a start on them with the data it had."""
        node = self.node(node_id)
        node.terminate()
        releases.install(node.container, version)
        self.releases[node_id] = version  # whoever starts it next starts it on `version`
        self.start_node(node_id)

    def finalize_features(self, node_id: int) -> dict[str, str]:
        """Raise the feature levels to those of the release every broker runs, with Kafka's own
        tool on broker `node_id`; return the levels set."""
        running = sorted(set(self.releases.values()))
        if len(running) != 1:
            raise ClusterError(f"brokers run Kafka {running}: finalize once every one is upgraded")
        node = self.node(node_id)
        code, out = node.sh(releases.finalize_script(running[0]))
        if code:
            raise ClusterError(f"finalizing the feature levels of Kafka {running[0]} on "
                               f"{node.alias} failed:\n{out[-2000:]}")
        return releases.parse_levels(out)

    def _await_unregistered(self, nodes: list[KafkaNode]) -> None:
        """ZooKeeper mode: wait until ZooKeeper has dropped the registrations of SIGKILLed brokers,
        however late a loaded ZooKeeper expires their sessions (up to ZK_LATE_S past the unloaded
        bound); a broker whose registration could not be seen gone waits that bound out by the clock
        when it starts."""
        lapses = {n: lapse for n in nodes if (lapse := n.zk_session_lapse()) is not None}
        if not lapses:
            return
        try:
            with self.zookeeper_session() as zk:
                gone = zk.await_absent([f"/brokers/ids/{n.node_id}" for n in lapses],
                                       max(lapses.values()) + ZK_LATE_S)
        except ClusterError:
            return
        if gone:
            for n in lapses:
                n.unregistered()

    def power_off(self, node_ids: list[int], torn: bool = False) -> lazydisk.PowerCut:
        """Cut the power of brokers together: every one is frozen before any loses what it had not
        fsynced (a correlated failure); they stay down until `start_nodes`."""
        nodes = [self.node(i) for i in node_ids]
        stopped: list[float] = []
        self._power_cut |= set(node_ids)
        try:
            pids = [n.host_pid() for n in nodes]
            stopped += [n.freeze(pid) for n, pid in zip(nodes, pids, strict=True)]
            losses = {n.node_id: n.power_off(torn) for n in nodes}
        except BaseException:
            # none may stay frozen: a frozen broker is "running" and would never be started again
            for n in nodes:
                n.kill()
            raise
        return lazydisk.PowerCut(losses, max(stopped) - min(stopped) if stopped else 0.0)

    def heal(self) -> None:
        """Remove every partition and link rule, resume paused nodes; stopped nodes are left to
        start_node."""
        self.firewall.clear()
        for node in (*self.nodes, *self.controllers):
            node.resume()
            self.firewall.apply(node)

    # -- evidence
    # -----------------------------------------------------------------------------------------
    def collect_logs(self, directory: Path) -> None:
        """Write each node's full log to DIR/<alias>.log."""
        directory.mkdir(parents=True, exist_ok=True)
        for node in self._all_nodes():
            (directory / f"{node.alias}.log").write_text(node.log_text())

    def dump_replica_logs(self, topic: str, sink: Callable[[list[bytes]], None]) -> None:
        """Every record of every replica of a topic, from each running broker's segment files,
        handed to `sink` as JSON lines of `replicas` rows, ROWS_AT_ONCE at a time: copied to this
        host's disk in parallel (a failed copy raises before any row is handed on), then read a
        segment at a time, partition by partition, one broker after another, so a batch the
        followers hold byte for byte is decoded once, and no more than one segment of an hours-long
        run's log, and one partition's parses, are held at once."""
        running = [n for n in self.nodes if n.state() == "running"]
        # the run's watchdog removes it if the run is killed meanwhile
        tmp = labels.scratch(self.spec.run_id)
        tmp.mkdir(parents=True, exist_ok=True)
        try:
            with cf.ThreadPoolExecutor(max_workers=len(running) or 1) as pool:
                copies = list(pool.map(lambda n: node_segments(n, topic, tmp), running))
            by_partition: dict[int, list[tuple[int, Segment]]] = {}
            for node, segments in zip(running, copies, strict=True):
                for segment in segments:
                    by_partition.setdefault(segment.partition, []).append((node.node_id, segment))
            for partition in sorted(by_partition):
                parsed: Parsed = {}
                rows = itertools.chain.from_iterable(parse_segment(
                    s.read(), broker, topic, partition, parsed)
                                                     for broker, s in by_partition[partition])
                while chunk := list(itertools.islice(rows, ROWS_AT_ONCE)):
                    sink(chunk)
        finally:
            labels.clean_scratch(self.spec.run_id)
