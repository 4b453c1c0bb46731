"""How a command ends: its exit code from its runs' badges, or on a signal (contracts.signals raised
it in the main thread and the cleanup ran) the shell's code for the signal."""

from __future__ import annotations

import atexit
import gc
import os
import signal
import sys
from typing import NoReturn

from contracts import signals
from contracts.errors import UNKNOWN_EXIT, ClusterError
from contracts.results import RunResult
from kchaos.console import console


def interrupted() -> int:
    """Say so and give the shell's code for the signal (130 for SIGINT, 143 for SIGTERM, 129 for
    SIGHUP)."""
    signum = signals.SIGNALLED[0] if signals.SIGNALLED else signal.SIGINT
    console.print(f"{signal.Signals(signum).name}: stopped; containers removed, "
                  "history kept", style="yellow",
                  markup=False)
    return 128 + signum


def leave(code: int) -> NoReturn:
    """Exit with `code`. A command a signal ended leaves by os._exit once its exit handlers have
    run: threads the signal cut short (the Spark warm-up waiting on its JVM, a client library's) can
    abort the interpreter's shutdown with SIGABRT, and by then the containers are removed and the
    history is closed. Otherwise every object is frozen first: the interpreter's last garbage
    collection would walk all of them for nothing."""
    if signals.SIGNALLED:
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    gc.freeze()
    sys.exit(code)


def exit_code(results: list[RunResult], allow_unknown: bool = False) -> int:
    """4 when the harness could not complete a run, 1 on a FAIL, 5 on UNKNOWN or NOT PROVOKED (0
    with --allow-unknown), else 0: PASS, EXPECTED ANOMALY, CAUGHT and KNOWN BUG are green."""
    if any(r.error for r in results):
        return ClusterError.exit_code
    if any(r.failed for r in results):
        return 1
    return UNKNOWN_EXIT if any(not r.badge.green for r in results) and not allow_unknown else 0
