"""Wall time and peak resident memory (the whole process tree, sampled) of a command run in a
subprocess."""

from __future__ import annotations

import contextlib
import os
import resource
import subprocess
import sys
import time

import psutil


def run(args: list[str], timeout_s: float = 7200, max_gib: float | None = None,
        env: dict[str, str] | None = None) -> tuple[float, float, str]:
    """(seconds, peak RSS in GiB of the process and its children, stdout) of `python -m <args>`
    (with `env` added to this process's environment); `max_gib` caps its address space, so an engine
    that cannot cope fails alone instead of starving the machine."""

    def cap() -> None:
        if max_gib:
            limit = int(max_gib * 2**30)
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    t0 = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, preexec_fn=cap,
                            env={**os.environ, **(env or {})})
    peak = peak_rss(proc, tree=True, every_s=0.2, timeout_s=timeout_s)
    out = proc.stdout.read() if proc.stdout else ""
    return (time.monotonic() - t0, peak / 2**30,
            out if proc.returncode == 0 else f"FAILED ({proc.returncode})")


def peak_rss(proc: subprocess.Popen, tree: bool, every_s: float,
             timeout_s: float = float("inf")) -> int:
    """The peak RSS in bytes of `proc` (with its children when `tree`), sampled every `every_s`
    until it exits; killed after `timeout_s`."""
    root, peak, t0 = psutil.Process(proc.pid), 0, time.monotonic()
    while proc.poll() is None:
        with contextlib.suppress(psutil.Error):
            peak = max(peak,
                       sum(p.memory_info().rss
                           for p in [root, *(root.children(recursive=True) if tree else [])]))
        if time.monotonic() - t0 > timeout_s:
            proc.kill()
            break
        time.sleep(every_s)
    return peak
