"""The thread a client runs on: start() returns it, stop() asks it to finish, join() waits for
it."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Self

HUNG_S = 20.0  # a client call still running this long past its own timeout is hung


class CallWatch:
    """The blocking client call a thread is in and when it must have returned, so the process around
    it can tell a hung call (librdkafka #5456: send_offsets_to_transaction can ignore its timeout
    while the group coordinator is down) from a slow one."""

    def __init__(self) -> None:
        self.what, self.due = "", 0.0

    @contextmanager
    def __call__(self, what: str, timeout_s: float) -> Iterator[None]:
        self.what, self.due = what, time.monotonic() + timeout_s
        try:
            yield
        finally:
            self.what = ""

    def hung(self) -> str:
        """What call is hung, and for how long ("" when none is)."""
        what, late = self.what, time.monotonic() - self.due
        return (f"{what} has not returned {late:.0f} s after its timeout" if what and late > HUNG_S
                else "")


class Worker:
    """Subclasses implement `_run`, checking `self._stop` between steps, and wrap blocking calls in
    `self.watch`."""

    # True: `_run` sets `positioned` (a consumer, once it has its first assignment)
    positions_itself = False

    def __init__(self, name: str) -> None:
        self._stop = threading.Event()
        self.watch = CallWatch()
        self.died = ""  # why the thread ended before it was asked to stop
        self.positioned = threading.Event()  # ready for the workload (see positions_itself)
        self.thread = threading.Thread(target=self._guarded, name=name, daemon=True)

    def _run(self) -> None:
        raise NotImplementedError

    def _guarded(self) -> None:
        try:
            self._run()
        except Exception as exc:  # noqa: BLE001 - the process around the thread records it
            self.died = f"{type(exc).__name__}: {exc}"
            raise

    def start(self) -> Self:
        self.thread.start()
        if not self.positions_itself:
            self.positioned.set()
        return self

    def stop(self) -> None:
        self._stop.set()

    def join(self, timeout: float | None = None) -> None:
        self.thread.join(timeout)
