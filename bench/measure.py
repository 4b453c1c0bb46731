"""Wall time and peak resident memory (the whole process tree, sampled) of a command run in a subprocess."""

from __future__ import annotations

import resource
import subprocess
import sys
import time

import psutil


def run(args: list[str], timeout_s: float = 7200, max_gib: float | None = None) -> tuple[float, float, str]:
    """(seconds, peak RSS in GiB of the process and its children, stdout) of `python -m <args>`; `max_gib` caps
    its address space, so an engine that cannot cope fails alone instead of starving the machine."""

    def cap() -> None:
        if max_gib:
            limit = int(max_gib * 2**30)
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    t0 = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, preexec_fn=cap)
    root = psutil.Process(proc.pid)
    peak = 0
    while proc.poll() is None:
        try:
            rss = sum(p.memory_info().rss for p in [root, *root.children(recursive=True)])
            peak = max(peak, rss)
        except psutil.Error:
            pass
        if time.monotonic() - t0 > timeout_s:
            proc.kill()
            break
        time.sleep(0.2)
    out = proc.stdout.read() if proc.stdout else ""
    return time.monotonic() - t0, peak / 2**30, out if proc.returncode == 0 else f"FAILED ({proc.returncode})"
