"""Workload clients in processes of their own: a fault can SIGKILL a consumer the way a crash kills
an application, and producers share no interpreter lock with each other, the nemesis or the metadata
sampler."""

from __future__ import annotations

import contextlib
import gc
import multiprocessing as mp
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Self

from contracts.history import NUMBERING_STRIDE, Event, HistoryWriter
from contracts.scenario import ConsumerSpec, CopierSpec, ProducerSpec
from contracts.share import ShareSpec
from workloads.consumer import ConsumerClient
from workloads.copier import CopierClient
from workloads.malloc import bound_malloc_arenas, trim_malloc
from workloads.producer import ProducerClient
from workloads.share import ShareClient
from workloads.txn_producer import TxnProducerClient

# The parent runs threads and librdkafka, so it never forks itself: a fork server, started once with
# this module imported (confluent-kafka, pyarrow, pydantic; ~1 s of a spawned interpreter), forks
# each client from a clean single-threaded process. Starting or restarting a client then takes
# milliseconds, not an interpreter's start.
CTX = mp.get_context("forkserver")
CTX.set_forkserver_preload([__name__])
Kind = Literal["producer", "consumer", "copier", "share"]
# Group and share group members flush before they store, commit or acknowledge (at-least-once); the
# background flush only paces assign-mode readers and the at-most-once modes, whose reads a crash
# loses for up to this long. Producers keep the default.
FLUSH_S = {"producer": 0.2, "consumer": 1.0, "copier": 0.2, "share": 1.0}
# how often a child looks for the stop flag (and publishes its counts), and the runner for ready
POLL_S = 0.1
STOP, READY = range(2)  # the child's flags
SIGNAL_S = 2.0  # how long a stop signal may take to stop a client process
# the exit status of a child whose client hung in a call (workloads.worker.CallWatch)
HUNG_EXIT = 75
# A client allocates a few container objects per message (payloads, callbacks, history rows) and
# keeps up to MAX_QUEUED sends in flight: at Python's default threshold (700) cyclic GC ran every
# ~10 sends and re-scanned them.
GC_THRESHOLD = (50_000, 20, 100)
Client = ProducerClient | TxnProducerClient | ConsumerClient | CopierClient | ShareClient
Spec = ProducerSpec | ConsumerSpec | CopierSpec | ShareSpec
# how often a child hands what a burst freed back to the kernel (workloads.malloc.trim_malloc)
TRIM_S = 10.0


@dataclass(frozen=True)
class Launch:
    """What a child needs to start its client: which one, its settings as JSON, where it writes or
    reads, and how long it may take to stop."""

    kind: Kind
    cid: int
    spec_json: str
    # what it writes or reads (a copier reads the first, copying to its output topic)
    topics: tuple[str, ...]
    partitions: int
    bootstrap: str
    history_dir: str
    join_s: float


def _client(launch: Launch, incarnation: int, history: HistoryWriter) -> Client:
    """The client of one incarnation of a client process."""
    first, spec, cid = incarnation * NUMBERING_STRIDE, launch.spec_json, launch.cid
    topics, parts, boot = launch.topics, launch.partitions, launch.bootstrap
    if launch.kind == "copier":
        return CopierClient(cid, CopierSpec.model_validate_json(spec), topics[0], boot, history,
                            first)
    if launch.kind == "producer":
        producer = ProducerSpec.model_validate_json(spec)
        if producer.transactional:
            return TxnProducerClient(cid, producer, topics, parts, boot, history, first)
        return ProducerClient(cid, producer, topics[0], boot, history, first)
    if launch.kind == "share":
        return ShareClient(cid, ShareSpec.model_validate_json(spec), topics, boot, history, first)
    return ConsumerClient(cid, ConsumerSpec.model_validate_json(spec), topics, parts, boot, history)


def join_seconds(spec: Spec) -> float:
    """How long a client may take to stop: a producer settles every outstanding send (each ends by
    message.timeout.ms) and finishes its transaction (its calls repeat until the transaction
    timeout)."""
    if isinstance(spec, ProducerSpec):
        return max(spec.message_timeout_ms,
                   spec.transaction_timeout_ms if spec.transactional else 0) / 1000 + 30
    if isinstance(spec, CopierSpec):
        return spec.transaction_timeout_ms / 1000 + 30
    if isinstance(spec, ShareSpec):
        return spec.process_ms / 1000 + 30
    return 30.0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _serve(launch: Launch, incarnation: int, runner: int, flags, counts) -> None:
    """The child: one client writing its own history part until the runner says stop (or dies). Its
    parent is the fork server, which lives on after a killed runner (every child holds the write end
    of its liveness pipe)."""
    bound_malloc_arenas()
    # what the fork server preloaded (confluent-kafka, pyarrow, pydantic) is never garbage
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLD)
    name = f"{launch.kind}-{launch.cid}"
    history = HistoryWriter(Path(launch.history_dir), flush_s=FLUSH_S[launch.kind],
                            part=f"{name}-{incarnation}")
    client = _client(launch, incarnation, history).start()
    trim_at = time.monotonic() + TRIM_S
    while not flags[STOP] and _alive(runner):
        if time.monotonic() >= trim_at:
            trim_malloc()
            trim_at += TRIM_S
        flags[READY] = client.positioned.is_set()
        counts[:] = [getattr(client, "acked", 0), getattr(client, "errors", 0)]
        # as an application's liveness check would: end it, to be restarted
        if hung := client.watch.hung():
            history.event(name, Event.HUNG, detail=hung)
            history.close(compact=False)
            os._exit(HUNG_EXIT)
        if not client.thread.is_alive():
            history.event(name, Event.STOPPED, detail="its thread ended: "
                                                      f"{client.died or 'returned'}")
            break
        time.sleep(POLL_S)
    client.stop()
    client.join(launch.join_s)
    counts[:] = [getattr(client, "acked", 0), getattr(client, "errors", 0)]
    history.close(compact=False)


class ClientProcessBase:
    """What every client process shows the runner and the faults: its name, pid and counts (earlier
    incarnations' `_done` plus the running one's `_counts`), and pause, resume and kill by signal.
    A subclass says whether it is `alive` and how to `_reap` its `_proc`."""

    kind: Kind
    cid: int
    _proc: Any
    _done: list[int]
    _counts: Any
    alive: bool

    def _reap(self, timeout: float) -> None:
        raise NotImplementedError

    @property
    def name(self) -> str:
        """The client's name in the history, e.g. producer-0 (every incarnation's)."""
        return f"{self.kind}-{self.cid}"

    @property
    def pid(self) -> int | None:
        """The running incarnation's process id (None before it started)."""
        return self._proc.pid if self._proc is not None else None

    @property
    def acked(self) -> int:
        return self._done[0] + self._counts[0]

    @property
    def errors(self) -> int:
        return self._done[1] + self._counts[1]

    @property
    def paused(self) -> bool:
        """Whether the running incarnation is stopped by a signal (its /proc state is T)."""
        try:
            return Path(f"/proc/{self._proc.pid}/stat").read_text().rsplit(
                ")", 1)[1].split()[0] == "T"
        except (AttributeError, OSError, IndexError):
            return False

    def pause(self) -> None:
        """SIGSTOP: every thread of the client stalls, its connections stay open and unanswered.
        Returns once the process is stopped (the signal is delivered asynchronously), or after
        SIGNAL_S."""
        if self.alive:
            self._signal(signal.SIGSTOP)
            deadline = time.monotonic() + SIGNAL_S
            while not self.paused and time.monotonic() < deadline:
                time.sleep(0.01)

    def resume(self) -> None:
        """SIGCONT after a pause."""
        if self.alive:
            self._signal(signal.SIGCONT)

    def kill(self) -> None:
        """SIGKILL: no LeaveGroup, no commit, no flush; a group notices after session.timeout.ms."""
        if self.alive:
            self._signal(signal.SIGKILL)
            self._reap(10)

    def _signal(self, sig: int) -> None:
        """Signal the child; one already gone (its exit status not yet read through the fork server)
        needs nothing."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self._proc.pid, sig)


class ClientProcess(ClientProcessBase):
    """Start, stop, kill and restart one workload client; each incarnation is a new process, same
    client name."""

    def __init__(self, kind: Kind, cid: int, spec: Spec,
                 topics: tuple[str, ...], partitions: int, bootstrap: str,
                 history_dir: Path) -> None:
        """`topics`: what it writes or reads (a copier reads the first, copying to its output
        topic)."""
        self._launch = Launch(kind, cid, spec.model_dump_json(), topics, partitions, bootstrap,
                              str(history_dir), join_seconds(spec))
        self.incarnation = -1
        self._proc: mp.Process | None = None
        self._flags = CTX.Array("b", 2, lock=False)
        self._counts = CTX.Array("q", 2, lock=False)  # acked, errors of the running incarnation
        self._done = [0, 0]  # counts of earlier incarnations

    @property
    def kind(self) -> Kind:
        return self._launch.kind

    @property
    def cid(self) -> int:
        return self._launch.cid

    @property
    def join_s(self) -> float:
        """How long a graceful stop may take."""
        return self._launch.join_s

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.is_alive()

    def start(self) -> Self:
        self._done = [self.acked, self.errors]
        self._counts[:] = [0, 0]
        self.incarnation += 1
        # stop, ready: plain shared bytes, no lock to wait on
        self._flags = CTX.Array("b", 2, lock=False)
        self._proc = CTX.Process(target=_serve, name=self.name,
                                 args=(self._launch, self.incarnation, os.getpid(), self._flags,
                                       self._counts),
                                 daemon=True)
        self._proc.start()
        return self

    def wait_ready(self, timeout: float) -> bool:
        """True once the child's client runs (a consumer: has its first assignment); False after
        `timeout`, or at once if the child died."""
        deadline = time.monotonic() + timeout
        while not self._flags[READY] and self.alive and time.monotonic() < deadline:
            time.sleep(POLL_S)
        return bool(self._flags[READY])

    @property
    def hung(self) -> bool:
        """Whether the last incarnation ended itself because its client hung in a call."""
        return self._proc is not None and self._proc.exitcode == HUNG_EXIT

    def _reap(self, timeout: float) -> None:
        self._proc.join(timeout)

    def stop(self) -> None:
        """Ask the child to stop: one write to shared memory, which no dead or stuck child can block
        (a multiprocessing Event's set() waits on a condition a child killed while waiting never
        releases)."""
        self._flags[STOP] = 1

    def join(self, timeout: float | None = None) -> None:
        """Wait for a graceful stop (by default as long as the child waits for its client, plus its
        history's last flush); kill what does not stop in time."""
        if self._proc is not None:
            self._proc.join(self.join_s + 15 if timeout is None else timeout)
            self.kill()
