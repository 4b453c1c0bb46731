"""Wall time and peak resident memory (the whole process tree, sampled) of a command run in a subprocess."""

from __future__ import annotations

import subprocess
import sys
import time

import psutil


def run(args: list[str], timeout_s: float = 7200) -> tuple[float, float, str]:
    """(seconds, peak RSS in GiB of the process and its children, stdout) of `python -m <args>`."""
    t0 = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True)
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
