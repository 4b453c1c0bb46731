"""The thread a client runs on: start() returns it, stop() asks it to finish, join() waits for it."""

from __future__ import annotations

import threading
from typing import Self


class Worker:
    """Subclasses implement `_run`, checking `self._stop` between steps."""

    def __init__(self, name: str) -> None:
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)

    def _run(self) -> None:
        raise NotImplementedError

    def start(self) -> Self:
        self.thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def join(self, timeout: float | None = None) -> None:
        self.thread.join(timeout)
