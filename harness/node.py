"""One Kafka or ZooKeeper node in a container: a small fluent builder on testcontainers'
DockerContainer."""

from __future__ import annotations

import contextlib
import functools
import os
import re
import signal
import tarfile
import threading
import time
from pathlib import Path
from typing import Self

import docker
import docker.errors
from tenacity import (
    Retrying,
    retry_if_exception,
    retry_if_exception_type,
    stop_after_attempt,
    wait_fixed,
)
from testcontainers.core.container import DockerContainer
from testcontainers.core.exceptions import ContainerStartException
from testcontainers.core.network import Network

from contracts.errors import ClusterError
from harness import archive, container_log, freezer, lazydisk, netdelay
from harness.broker_config import REMOTE_DIR, ZK_TICK_MS
from harness.migration import alias as controller_alias

START_SCRIPT = (Path(__file__).parent / "docker" / "start.sh").read_text()
STARTED = {
    "kraft": re.compile(r"Kafka Server started|KafkaRaftServer.*started"),
    "controller": re.compile(r"Kafka Server started|KafkaRaftServer.*started"),
    # 1.0+ | 0.x
    "zk-broker": re.compile(r"\[KafkaServer id=\d+\] started|\[Kafka Server \d+\], started"),
    "zookeeper": re.compile(r"binding to port|Started AdminServer|ZooKeeper audit is"),
}
LOG_TAIL = 25
PLUGINS_DIR = "/opt/kafka/plugins"  # on the broker's classpath (start.sh)
FIRST_ERROR = re.compile(r"^.*\b(ERROR|FATAL)\b.*\n(.*Exception.*\n)?", re.MULTILINE)
FREEZE_ATTEMPTS = 5


def _freeze_failed(exc: BaseException) -> bool:
    """The engine's answer when the cgroup freezer timed out, or no answer in time (the cgroup is
    thawed by then)."""
    return isinstance(exc, freezer.EngineStuck) or (
        isinstance(exc, docker.errors.APIError) and "unable to freeze" in str(exc))


def _unsynced(exc: BaseException) -> bool:
    """The engine still counts a node paused whose cgroup was thawed from this host (or it did not
    answer)."""
    return isinstance(exc, freezer.EngineStuck) or (
        isinstance(exc, docker.errors.APIError) and "not paused" in str(exc))


@functools.cache
def _engine() -> docker.APIClient:
    """An engine client whose calls give up after freezer.ENGINE_CALL_S."""
    return docker.from_env(timeout=freezer.ENGINE_CALL_S).api


class KafkaNode(DockerContainer):
    """A broker (KRaft or ZooKeeper mode) or a ZooKeeper server, with lifecycle operations that wait
    for effect."""

    def __init__(self, image: str, node_id: int, role: str = "kraft") -> None:
        super().__init__(image)
        self.node_id = node_id
        self.role = role
        self.alias = {"zookeeper": "zookeeper", "controller": controller_alias(node_id)}.get(
            role, f"kafka-{node_id}")
        self.external_port: int | None = None
        self.properties: dict[str, str] = {}
        self._log_mark = container_log.mark()  # where the log ended when the latest start began
        self._killed_at: float | None = None
        # its last stop was a clean shutdown (not a kill, a power cut or a crash)
        self.stopped_cleanly = False
        self.lazy_disk = False
        # docker-py run() arguments beyond the builder's (with_kwargs replaces them whole)
        self._run_args: dict = {}
        # An exec racing a pause can hang runc with the container's exec lock held (cd89059): never
        # both at once
        self._exec_or_freeze = threading.RLock()
        self.with_command(["sh", "-c", START_SCRIPT]).with_env("KCHAOS_ROLE", role)

    # -- builder
    # -----------------------------------------------------------------------------------------
    def with_properties(self, properties: dict[str, str]) -> Self:
        """Set the node's server.properties (or zookeeper.properties)."""
        self.properties = dict(properties)
        body = "\n".join(f"{k}={v}" for k, v in sorted(self.properties.items()))
        return self.with_env("KCHAOS_PROPERTIES", body)

    def with_external_port(self, port: int) -> Self:
        """Publish the client listener on 127.0.0.1:port (same number inside, so the advertised
        address holds). It is reserved inside the container, whose ephemeral range may hold it: a
        restarting broker's own outbound connections once took it before its listener could bind
        ("Address already in use")."""
        self.external_port = port
        self.ports[f"{port}/tcp"] = ("127.0.0.1", port)
        self._run_args["sysctls"] = {"net.ipv4.ip_local_reserved_ports": str(port)}
        return self.with_kwargs(**self._run_args)

    def on(self, network: Network, labels: dict[str, str], cluster_id: str) -> Self:
        """Join the cluster's private network under the node's alias; label it; allow iptables and
        tc."""
        self.with_network(network).with_network_aliases(self.alias).with_name(f"{network.name}-{self.alias}")
        self.with_env("KCHAOS_CLUSTER_ID", cluster_id)
        self._run_args |= {"labels": labels, "cap_add": ["NET_ADMIN"], "hostname": self.alias}
        return self.with_kwargs(**self._run_args)

    def with_lazy_disk(self, binary: Path) -> Self:
        """Put the data directory on lazyfs, so `power_off` can drop what the broker had not
        fsynced."""
        args = lazydisk.run_args()
        self._run_args |= args | {"cap_add": [*self._run_args.get("cap_add", []), *args["cap_add"]]}
        self.with_volume_mapping(str(binary), lazydisk.IN_CONTAINER, "ro")
        self.with_env("KCHAOS_LAZYFS", lazydisk.IN_CONTAINER)
        self.lazy_disk = True
        return self.with_kwargs(**self._run_args)

    def with_net_delay(self, binary: Path) -> Self:
        """Mount netdelay, which `latency` faults start inside the container to hold packets an
        NFQUEUE rule sends."""
        return self.with_volume_mapping(str(binary), netdelay.IN_CONTAINER, "ro")

    def with_remote_tier(self, shared: Path, plugin: Path) -> Self:
        """Mount the remote tier every broker shares, and the jar of the plugin that writes it."""
        self.with_volume_mapping(str(shared), REMOTE_DIR, "rw")
        return self.with_volume_mapping(str(plugin), f"{PLUGINS_DIR}/{plugin.name}", "ro")

    # -- state
    # --------------------------------------------------------------------------------------------
    @property
    def container(self):
        """The docker-py container object."""
        return self.get_wrapped_container()

    def state(self) -> str:
        """Docker's status: running, paused, exited, ..."""
        self.container.reload()
        return self.container.status

    def ip(self) -> str:
        """The node's address on the cluster network."""
        self.container.reload()
        nets = self.container.attrs["NetworkSettings"]["Networks"]
        return next(iter(nets.values()))["IPAddress"]

    def log_text(self) -> str:
        """Everything the node printed, across restarts."""
        return self.container.logs().decode(errors="replace")

    def log_tail(self, lines: int = LOG_TAIL) -> str:
        """The last lines the node printed."""
        return self.container.logs(tail=lines).decode(errors="replace").rstrip("\n")

    def has_started(self) -> bool:
        """Whether the node's log since its latest start began says it finished starting (only those
        lines are read: an hours-long run restarts brokers hundreds of times, and their whole logs
        grow with it)."""
        return bool(STARTED[self.role].search(container_log.since(self.container, self._log_mark)))

    def sh(self, script: str) -> tuple[int, str]:
        """Run a shell script as root inside the node; return (exit code, output)."""
        with self._exec_or_freeze:
            code, out = self.container.exec_run(["sh", "-c", script], user="root")
        return code, out.decode(errors="replace")

    def sh_if_running(self, script: str) -> tuple[int, str] | None:
        """`sh`, unless the node is stopped or paused (None): no pause can begin between the check
        and the exec."""
        with self._exec_or_freeze:
            return self.sh(script) if self.state() == "running" else None

    def read_file(self, path: str) -> bytes:
        """A file's bytes (see archive.read_file)."""
        return archive.read_file(self.container, path)

    def read_json(self, path: str, attempts: int, wait_s: float) -> dict | None:
        """A JSON file of the node, or None when it is missing (see archive.read_json)."""
        return archive.read_json(lambda: self.read_file(path), attempts, wait_s)

    def copy_file(self, path: str, dest: Path) -> None:
        """A file of the node, streamed to `dest` on this host (see archive.copy_file)."""
        archive.copy_file(self.container, path, dest)

    # -- lifecycle
    # ----------------------------------------------------------------------------------------
    def launch(self) -> Self:
        """Create and start the container (readiness is waited for separately, so nodes start in
        parallel)."""
        self._log_mark = container_log.mark()
        super().start()
        return self

    def wait_started(self, timeout_s: float = 90.0) -> None:
        """Wait until the node's log shows its latest start completed; on timeout show the log
        tail."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.has_started():
                return
            if self.state() == "exited":
                raise ClusterError(f"{self.alias} exited while starting. {self._first_error()}Last "
                                   f"log lines:\n{self.log_tail()}")
            time.sleep(0.25)
        raise ClusterError(
            f"{self.alias} did not start within {timeout_s:.0f}s. Last log "
            f"lines:\n{self.log_tail()}\nHint: a 2-core machine running several clusters or other "
            "JVMs starts slowly; run one cluster at a time."
        )

    def _first_error(self) -> str:
        """The first ERROR or FATAL line the node printed since its latest start began, with the
        exception under it (a broker that fails to start logs its cause there, then a long
        shutdown)."""
        found = FIRST_ERROR.search(container_log.since(self.container, self._log_mark))
        return f"First error:\n{found.group(0)}" if found else ""

    def kill(self) -> None:
        """SIGKILL the node's process; return once the container has exited."""
        self._stop_with(lambda: self.container.kill(signal="SIGKILL"))
        self._killed_at, self.stopped_cleanly = time.monotonic(), False

    def terminate(self, timeout_s: int = 60) -> None:
        """SIGTERM (a clean, controlled shutdown); return once the container has exited."""
        self._stop_with(lambda: self.container.stop(timeout=timeout_s))
        self.stopped_cleanly = True

    def _stop_with(self, action) -> None:
        self.resume()
        if self.state() != "running":
            return
        action()
        self.container.wait(timeout=120)
        if self.state() == "running":
            raise ClusterError(f"{self.alias} is still running after it was stopped")

    def host_pid(self) -> int:
        """The broker's (the container's first process's) pid on this host, once the node is
        thawed."""
        self.resume()
        self.container.reload()
        return self.container.attrs["State"]["Pid"]

    def freeze(self, pid: int) -> float:
        """SIGSTOP the broker, straight from this host when allowed (the engine's API is slower by
        milliseconds); return when it was sent. `power_off` finishes the cut."""
        try:
            os.kill(pid, signal.SIGSTOP)
        except PermissionError:
            self.container.kill(signal="SIGSTOP")
        return time.monotonic()

    def power_off(self, torn: bool = False) -> lazydisk.Loss:
        """After `freeze`: have lazyfs put every file back to its last fsync (`torn`: a file that
        grew keeps part of a page more), then kill the container. Start it again with `start`."""
        try:
            self._wait_frozen()
            loss = self.lazyfs("poweroff-torn" if torn else "poweroff")["loss"]
        finally:
            self.kill()
        return lazydisk.Loss(loss["files"], loss["bytes"], loss["torn"])

    def net_delay(self, queue: int) -> netdelay.Delayed:
        """What the node's netdelay for `queue` has let through so far (nothing, when none has run).
        netdelay replaces its stats file several times a second: `read_json` reads again a read that
        met a replacement."""
        try:
            stats = self.read_json(netdelay.stats_file(queue), attempts=5, wait_s=0.05)
        except (ValueError, tarfile.ReadError) as exc:
            raise ClusterError(f"netdelay on {self.alias} left no readable stats: "
                               f"{str(exc)[:300]!r}") from exc
        return netdelay.read(stats, self.alias)

    def lazyfs(self, command: str) -> dict:
        """Send the node's lazyfs a command (poweroff, full, "slow MS", heal, dirty) and return its
        answer."""
        if not self.lazy_disk:
            raise ClusterError(f"{self.alias} has no lazyfs data directory; power and disk faults "
                               "need one")
        code, out = self.sh(f"{lazydisk.IN_CONTAINER} ctl {lazydisk.SOCKET} '{command}'")
        if code != 0:
            raise ClusterError(f"lazyfs on {self.alias} did not answer {command!r} (exit {code}): "
                               f"{out.strip()[-300:]}")
        return lazydisk.answer(out, self.alias)

    def _wait_frozen(self, timeout_s: float = 10.0) -> None:
        """Wait until every thread of the broker (the container's first process) is stopped: a
        thread inside a system call stops when the call returns, so nothing it does can land after
        the power is cut."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            code, out = self.sh("cat /proc/1/task/*/stat | sed 's/.*) //' | cut -c1")
            if code == 0 and out.split() and set(out.split()) <= {"T", "t"}:
                return
            time.sleep(0.01)
        raise ClusterError(f"{self.alias}'s broker did not stop within {timeout_s:.0f}s of SIGSTOP")

    def pause(self) -> None:
        """Freeze every process of the node (the cgroup freezer). When runc gives up (a process did
        not freeze in time) or the engine does not answer (the node is then thawed from this host),
        it is tried again."""
        if self.state() != "running":
            return
        for attempt in Retrying(stop=stop_after_attempt(FREEZE_ATTEMPTS), wait=wait_fixed(0.5),
                                reraise=True, retry=retry_if_exception(_freeze_failed),
                                before_sleep=lambda _: self.resume()):
            with attempt:
                self._engine_call("pause")

    def resume(self) -> None:
        """Thaw a paused node."""
        for attempt in Retrying(stop=stop_after_attempt(2), reraise=True,
                                retry=retry_if_exception(_unsynced),
                                before_sleep=lambda _: self._refreeze_if_paused()):
            with attempt:
                if self.state() == "paused":
                    self._engine_call("unpause")

    def _refreeze_if_paused(self) -> None:
        """Freeze from this host a node the engine counts paused, so its unpause can succeed."""
        if self.state() == "paused":
            freezer.freeze(self.container.id)

    def _engine_call(self, verb: str, **kwargs) -> None:
        """A pause, unpause or removal that cannot hang: see `freezer.bounded`."""
        cid = self.container.id
        # a pause or unpause waits for a running exec; a removal must not
        with self._exec_or_freeze if verb in ("pause", "unpause") else contextlib.nullcontext():
            freezer.bounded(lambda: getattr(_engine(), verb)(cid, **kwargs), cid,
                            f"docker {verb} {self.alias}")

    def start(self, timeout_s: float = 90.0) -> Self:  # type: ignore[override]
        """Restart a stopped node with its data intact and wait until it has started again."""
        self.begin_start()
        self.wait_started(timeout_s)
        return self

    def begin_start(self) -> None:
        """Start a stopped (or thaw a paused) node without waiting: KRaft voters must come back
        together."""
        if self.state() in ("running", "paused"):
            self.resume()
            return
        self._await_zk_session_expiry()
        self._log_mark = container_log.mark(self.container)
        self.container.start()
        self.stopped_cleanly = False  # until its next clean stop: a crash later is not one

    def zk_session_lapse(self) -> float | None:
        """When a SIGKILLed ZooKeeper-mode broker's session has expired on an unloaded ZooKeeper
        (time.monotonic(); None: no such session). Until then its ephemeral /brokers/ids znode
        stays, and a restart exits with NodeExists. ZooKeeper expires a session at the first tick
        past its timeout."""
        if self.role != "zk-broker" or self._killed_at is None:
            return None
        return (self._killed_at + int(self.properties["zookeeper.session.timeout.ms"]) / 1000
                + ZK_TICK_MS / 1000 + 1)

    def unregistered(self) -> None:
        """ZooKeeper no longer holds this broker's registration: it may start at once."""
        self._killed_at = None

    def _await_zk_session_expiry(self) -> None:
        """Without word from ZooKeeper (`unregistered`), wait out a killed broker's session by the
        clock."""
        lapse = self.zk_session_lapse()
        if lapse is not None:
            time.sleep(max(0.0, lapse - time.monotonic()))
            self._killed_at = None

    def remove(self) -> None:
        """Remove the container and its anonymous volumes, whatever its state (gone, or being
        removed, is done)."""
        try:
            self.get_wrapped_container()
        except ContainerStartException:  # never started
            return
        try:
            freezer.thaw(self.container.id)  # a forced removal kills a paused node too
            for attempt in Retrying(stop=stop_after_attempt(2), reraise=True,
                                    retry=retry_if_exception_type(freezer.EngineStuck)):
                with attempt:
                    self._engine_call("remove_container", force=True, v=True)
        except docker.errors.NotFound:
            pass
        except docker.errors.APIError as exc:
            # 409: "removal ... already in progress"
            if exc.status_code != 409 or "removal" not in str(exc):
                raise
