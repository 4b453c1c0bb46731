"""A live consumer in a process of its own, so a fault can SIGKILL it the way a crash kills an application."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
from pathlib import Path
from typing import Self

from harness.history import HistoryWriter
from harness.scenario import ConsumerSpec
from workloads.consumer import ConsumerClient

SPAWN = mp.get_context("spawn")  # the parent runs threads and librdkafka; fork would copy them half-way


def _serve(cid: int, incarnation: int, spec_json: str, topic: str, partitions: int, bootstrap: str,
           history_dir: str, stop) -> None:
    """The child: one ConsumerClient writing its own history part until the parent says stop (or dies)."""
    parent = os.getppid()
    # Group members flush before they store or commit (at-least-once); the background flush only paces
    # assign-mode readers and the at-most-once mode, whose reads a crash loses for up to this long.
    history = HistoryWriter(Path(history_dir), flush_s=1.0, part=f"consumer-{cid}-{incarnation}")
    client = ConsumerClient(cid, ConsumerSpec.model_validate_json(spec_json), topic, partitions, bootstrap,
                            history).start()
    while not stop.wait(1.0) and os.getppid() == parent:
        pass
    client.stop()
    client.join(30)
    history.close(compact=False)


class ConsumerProcess:
    """Start, stop, kill and restart one live consumer; each incarnation is a new process, same reader name."""

    def __init__(self, cid: int, spec: ConsumerSpec, topic: str, partitions: int, bootstrap: str,
                 history_dir: Path) -> None:
        self.cid = cid
        self._args = (spec.model_dump_json(), topic, partitions, bootstrap, str(history_dir))
        self.incarnation = -1
        self._proc: mp.Process | None = None
        self._stop = SPAWN.Event()

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.is_alive()

    def start(self) -> Self:
        self.incarnation += 1
        self._stop = SPAWN.Event()
        self._proc = SPAWN.Process(target=_serve, args=(self.cid, self.incarnation, *self._args, self._stop),
                                   name=f"consumer-{self.cid}", daemon=True)
        self._proc.start()
        return self

    def kill(self) -> None:
        """SIGKILL: no LeaveGroup, no commit, no flush; the group notices after session.timeout.ms."""
        if self.alive:
            os.kill(self._proc.pid, signal.SIGKILL)
            self._proc.join(10)

    def stop(self) -> None:
        self._stop.set()

    def join(self, timeout: float) -> None:
        """Wait for a graceful stop; kill what does not stop in time."""
        if self._proc is not None:
            self._proc.join(timeout)
            self.kill()
