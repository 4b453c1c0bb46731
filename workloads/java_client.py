"""The Java kafka-clients worker (workloads/java): built once per release against Maven Central's
kafka-clients, started as a client process with the Python clients' control (ready, stop, kill,
pause) and history."""

from __future__ import annotations

import contextlib
import subprocess
import threading
import time
from pathlib import Path
from typing import Self

from contracts.history import NUMBERING_STRIDE
from contracts.scenario import ConsumerSpec, CopierSpec, ProducerSpec, copier_id, transactional_id
from contracts.share import ShareSpec
from contracts.versions import SHARE_FROM, release
from workloads.client_process import FLUSH_S, POLL_S, ClientProcessBase, Kind, join_seconds

JAVA_SOURCES = Path(__file__).parent / "java"


def java_sources(version: str) -> tuple[Path, ...]:
    """The worker's source folders for kafka-clients `version`: share/ where it has a share
    consumer."""
    return (JAVA_SOURCES, JAVA_SOURCES / "share") if release(version) >= SHARE_FROM else (
        JAVA_SOURCES,)


# one GC thread, since two cores carry the brokers, the harness and every client; a heap that holds
# buffer.memory's worth of records in flight, with their callbacks, without back-to-back full GCs;
# a young generation sized for them, so a young collection finds most of them acknowledged (the
# default, a third of a smaller starting heap, copied and promoted them, at half the send rate)
JVM = ("-Xmx1g", "-Xmn256m", "-XX:+UseSerialGC",
       # the client's INFO log (connections, request timeouts, epoch bumps) goes to the worker's log
       "-Dorg.slf4j.simpleLogger.defaultLogLevel=info",
       "-Dorg.slf4j.simpleLogger.showDateTime=true")
ASSIGNORS = {"range": "org.apache.kafka.clients.consumer.RangeAssignor",
             "roundrobin": "org.apache.kafka.clients.consumer.RoundRobinAssignor",
             "cooperative-sticky": "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"}


def producer_settings(spec: ProducerSpec, cid: int, bootstrap: str) -> dict[str, object]:
    """kafka-clients settings of a scenario's producer. Java's request.timeout.ms is both the
    broker's ack wait and the client's give-up, so a scenario's socket timeout takes its place; the
    delivery timeout must cover linger plus a request, so it is raised to that when lower."""
    request = spec.socket_timeout_ms or spec.request_timeout_ms
    conf = {"acks": spec.acks, "enable.idempotence": spec.idempotence, "retries": spec.retries,
            "max.in.flight.requests.per.connection": spec.max_in_flight,
            "linger.ms": spec.linger_ms, "batch.size": spec.batch_size,
            "compression.type": spec.compression, "request.timeout.ms": request,
            "delivery.timeout.ms": max(spec.message_timeout_ms, spec.linger_ms + request),
            "max.block.ms": 10_000, "client.id": f"chaos-producer-{cid}"}
    if spec.transactional:
        conf |= {"transactional.id": transactional_id(cid),
                 "transaction.timeout.ms": spec.transaction_timeout_ms}
    return _common(conf, bootstrap) | {
        "kchaos.kind": "txn-producer" if spec.transactional else "producer",
        "kchaos.rate": spec.rate, "kchaos.payload_bytes": spec.payload_bytes,
        "kchaos.keyed": int(spec.keyed), "kchaos.txn_sends": spec.txn_sends,
        "kchaos.abort_ratio": spec.abort_ratio, "kchaos.txn_open_ms": spec.txn_open_ms,
        "kchaos.message_timeout_ms": conf[
            "delivery.timeout.ms"], "kchaos.transaction_timeout_ms": spec.transaction_timeout_ms}


def consumer_settings(spec: ConsumerSpec, cid: int, bootstrap: str) -> dict[str, object]:
    """kafka-clients settings of a live consumer, as workloads.consumer.member_config's (the
    group protocol KIP-848 leaves the session, heartbeat and assignor to the broker)."""
    conf = {"group.id": spec.group, "auto.offset.reset": spec.reset,
            "enable.auto.commit": spec.commit == "auto", "isolation.level": spec.isolation_of(cid),
            "client.id": f"chaos-consumer-{cid}", "max.poll.records": 500}
    if spec.group_protocol == "consumer":
        conf["group.protocol"] = "consumer"
    else:
        conf |= {"session.timeout.ms": 10_000, "heartbeat.interval.ms": 1_000,
                 "partition.assignment.strategy": ASSIGNORS[spec.assignor]}
    return _common(conf, bootstrap) | {"kchaos.kind": "consumer", "kchaos.mode": spec.mode,
                                       "kchaos.commit": spec.commit}


def copier_settings(spec: CopierSpec, cid: int, bootstrap: str) -> dict[str, object]:
    """kafka-clients settings of an eos-copy instance, as workloads.copier's: a transactional
    producer (`client.`) and a read_committed group member that commits nothing itself
    (`consumer.`)."""
    producer = {"transactional.id": copier_id(cid),
                "transaction.timeout.ms": spec.transaction_timeout_ms, "enable.idempotence": True,
                "acks": "all", "linger.ms": 5, "max.block.ms": 10_000, "client.id": f"copier-{cid}"}
    consumer = {"group.id": spec.group, "isolation.level": "read_committed",
                "auto.offset.reset": "earliest", "enable.auto.commit": False,
                "session.timeout.ms": 10_000, "heartbeat.interval.ms": 1_000,
                "max.poll.records": spec.records, "default.api.timeout.ms": 10_000,
                "client.id": f"copier-{cid}-consumer"}
    return _common(producer, bootstrap) | _common(consumer, bootstrap, "consumer.") | {
        "kchaos.kind": "copier", "kchaos.abort_ratio": spec.abort_ratio,
        "kchaos.offsets": spec.offsets,
        "kchaos.transaction_timeout_ms": spec.transaction_timeout_ms}


def share_settings(spec: ShareSpec, cid: int, bootstrap: str) -> dict[str, object]:
    """kafka-clients settings of a share group member, as workloads.share.share_config's: explicit
    acknowledgement; the broker holds the lock and delivery limit."""
    conf = {"group.id": spec.group, "share.acknowledgement.mode": "explicit",
            "client.id": f"chaos-share-{cid}"}
    return _common(conf, bootstrap) | {
        "kchaos.kind": "share", "kchaos.release": spec.release, "kchaos.reject": spec.reject,
        "kchaos.process_ms": spec.process_ms, "kchaos.accept": spec.accept}


def _common(conf: dict, bootstrap: str, prefix: str = "client.") -> dict[str, str]:
    conf |= {"bootstrap.servers": bootstrap, "socket.connection.setup.timeout.ms": 5000,
             "reconnect.backoff.max.ms": 1000}
    return {f"{prefix}{k}": str(v).lower() if isinstance(v, bool) else str(v)
            for k, v in conf.items()}


# each role's settings, by the kind of client process that plays it
SETTINGS = {"producer": producer_settings, "consumer": consumer_settings,
            "copier": copier_settings, "share": share_settings}


def _properties(settings: dict[str, object]) -> bytes:
    """Java properties lines (`key=value`, backslashes escaped) and the `end` line the worker reads
    up to."""
    lines = [f"{k}={str(v).replace(chr(92), chr(92) * 2)}" for k, v in settings.items()]
    return ("\n".join(lines) + "\nend\n").encode()


class JavaClientProcess(ClientProcessBase):
    """Start, stop, kill, pause and restart one workload client on the Java worker; each incarnation
    is a new JVM, same client name. It stops on a `stop` line or when its stdin closes (the runner
    died)."""

    def __init__(self, kind: Kind, cid: int,
                 spec: ProducerSpec | ConsumerSpec | CopierSpec | ShareSpec,
                 topics: tuple[str, ...], partitions: int, bootstrap: str, history_dir: Path,
                 classpath: str) -> None:
        """`classpath`: the worker built against the kafka-clients release it runs
        (harness.jars.worker_classpath)."""
        made = SETTINGS[kind]
        self.kind, self.cid = kind, cid
        self.join_s = join_seconds(spec)
        self._settings = made(spec, cid, bootstrap) | {
            "kchaos.cid": cid, "kchaos.topics": ",".join(topics), "kchaos.partitions": partitions,
            "kchaos.history": history_dir, "kchaos.flush_ms": int(FLUSH_S[kind] * 1000),
            "kchaos.join_ms": int(self.join_s * 1000)}
        self._log_dir = history_dir.parent / "logs"
        self._classpath = classpath
        self.incarnation = -1
        self._proc: subprocess.Popen | None = None
        self._ready = False
        self._counts, self._done = [0, 0], [0, 0]

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    hung = False  # kafka-clients' blocking calls end by their own timeouts (max.block.ms)

    def start(self) -> Self:
        self._done = [self.acked, self.errors]
        self._counts, self._ready = [0, 0], False
        self.incarnation += 1
        part = f"{self.name}-{self.incarnation}"
        self._log_dir.mkdir(parents=True, exist_ok=True)
        with open(self._log_dir / f"{part}.java.log", "ab") as log:
            self._proc = subprocess.Popen(["java", *JVM, "-cp", self._classpath, "ChaosClient"],
                                          stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=log, start_new_session=True)
        self._proc.stdin.write(_properties(self._settings | {
            "kchaos.part": part, "kchaos.first": self.incarnation * NUMBERING_STRIDE}))
        self._proc.stdin.flush()
        threading.Thread(target=self._listen, args=(self._proc,), daemon=True,
                         name=f"{part}-stdout").start()
        return self

    def _listen(self, proc: subprocess.Popen) -> None:
        """Read the worker's `kchaos ready` and `kchaos counts A E` lines until it exits."""
        for line in proc.stdout:
            words = line.split()
            if words[:2] == [b"kchaos", b"ready"]:
                self._ready = True
            elif words[:2] == [b"kchaos", b"counts"] and proc is self._proc:
                self._counts = [int(words[2]), int(words[3])]

    def wait_ready(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while not self._ready and self.alive and time.monotonic() < deadline:
            time.sleep(POLL_S)
        return self._ready

    def _reap(self, timeout: float) -> None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._proc.wait(timeout)

    def stop(self) -> None:
        """Ask the worker to stop (a paused one is resumed first, or it could not read it)."""
        if self.alive:
            self.resume()
            with contextlib.suppress(BrokenPipeError, OSError, ValueError):
                self._proc.stdin.write(b"stop\n")
                self._proc.stdin.flush()

    def join(self, timeout: float | None = None) -> None:
        """Wait for a graceful stop (its client's own wait plus its history's last flush); kill what
        does not stop in time."""
        if self._proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(self.join_s + 15 if timeout is None else timeout)
            self.kill()
            with contextlib.suppress(OSError, ValueError):
                self._proc.stdin.close()
