"""`python -m harness.watchdog PID START RUN_ID`: outlives a harness process and removes its run's
containers, network and remote tier once it is gone (killed with SIGKILL, say), so a crashed run
never leaves brokers or mounts behind for long."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from harness import labels

POLL_S = 1.0


def start_time(pid: int) -> str | None:
    """A process's start time in clock ticks since boot (/proc/PID/stat field 22), or None when it
    is gone or a zombie: with the pid, it names one process even after the pid is reused."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) "
    return None if fields[0] == "Z" else fields[19]


def watch(pid: int, started: str, run_id: str) -> None:
    """Wait until the process is gone, then remove what its run left."""
    while start_time(pid) == started:
        time.sleep(POLL_S)
    labels.clean(run_id)


def spawn(run_id: str) -> subprocess.Popen:
    """A watchdog over this process for one run, in a session of its own (a signal to the harness's
    process group, as CI sends when it cancels a job, does not reach it)."""
    pid = os.getpid()
    return subprocess.Popen([sys.executable, "-m", "harness.watchdog", str(pid),
                             str(start_time(pid)), run_id],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL,
                            start_new_session=True)


if __name__ == "__main__":
    watch(int(sys.argv[1]), sys.argv[2], sys.argv[3])
