"""The one signal policy: SIGINT raises KeyboardInterrupt, SIGTERM and SIGHUP raise SystemExit(128 +
n) in the main thread, so each layer's cleanup runs; a compaction holds them until it ends."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator

SIGNALLED: list[int] = []  # the signal that is ending this process, if one is
ENDING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _raise(signum: int, _frame) -> None:
    """SIGINT as Ctrl-C; SIGTERM (what `timeout` and CI cancellations send) and SIGHUP as an exit
    with the shell's code for the signal."""
    SIGNALLED.append(signum)
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise SystemExit(128 + signum)


@contextlib.contextmanager
def handled(unless_caller: bool = False) -> Iterator[None]:
    """The policy inside the block; the old handlers come back after. With `unless_caller`, a signal
    some caller already handles (the CLI, pytest's SIGINT) keeps its handler. Outside the main
    thread nothing changes."""
    old: dict[int, object] = {}
    for sig in ENDING:
        if unless_caller and signal.getsignal(sig) is not signal.SIG_DFL:
            continue
        try:
            old[sig] = signal.signal(sig, _raise)
        except ValueError:  # not the main thread
            break
    try:
        yield
    finally:
        _restore(old)


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Hold every ending signal until the block ends, then act on the first that came: a compaction
    cut in half leaves JSON Lines beside a Parquet file that already holds some of them. Outside the
    main thread signals cannot be caught, and the block runs as it is."""
    came: list[int] = []
    old: dict[int, object] = {}
    with contextlib.suppress(ValueError):  # not the main thread
        for sig in ENDING:
            old[sig] = signal.signal(sig, lambda signum, _frame: came.append(signum))
    try:
        yield
    finally:
        _restore(old)
        if came:
            signal.raise_signal(came[0])


def _restore(old: dict[int, object]) -> None:
    """Put back the handlers a block replaced (one installed outside Python reads as None: the
    default)."""
    for sig, handler in old.items():
        signal.signal(sig, signal.SIG_DFL if handler is None else handler)
