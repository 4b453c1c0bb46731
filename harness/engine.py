"""Make sure a Docker engine answers, starting Debian's dockerd when we are allowed to."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import psutil

from contracts.describe import progress
from contracts.errors import EngineError
from harness.apt import apt_install

DOCKERD_LOG = Path("/var/log/kchaos-dockerd.log")


def engine_answers() -> bool:
    """True when `docker info` succeeds."""
    if shutil.which("docker") is None:
        return False
    done = subprocess.run(["docker", "info"], capture_output=True, timeout=30)
    return done.returncode == 0


def ensure_engine(wait_s: float = 60.0, say=progress) -> None:
    """Return when a Docker engine answers; install and start dockerd as root on Debian if
    needed."""
    if engine_answers():
        return
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise EngineError(
            "No Docker engine answers `docker info`. Start one (e.g. `sudo systemctl start "
            "docker`) or run as root on Debian/Ubuntu so kchaos can install docker.io and start "
            "dockerd itself."
        )
    if shutil.which("dockerd") is None:
        say("Installing Debian's docker.io (no Docker engine on this machine)...")
        apt_install("docker.io", "iptables", error=EngineError)
    say(f"Starting dockerd in the background (log: {DOCKERD_LOG})...")
    with DOCKERD_LOG.open("ab") as log:
        subprocess.Popen(["dockerd"], stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                         start_new_session=True)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if engine_answers():
            return
        time.sleep(0.5)
    tail = DOCKERD_LOG.read_text(errors="replace").splitlines()[-10:]
    raise EngineError(f"dockerd did not answer within {wait_s:.0f}s. Last lines "
                      f"of {DOCKERD_LOG}:\n" + "\n".join(tail))


STACKS_GLOB = "goroutine-stacks-*.log"
STACK_DIRS = (Path("/var/run/docker"), Path("/var/lib/docker"))
# What an engine call that never came back leaves in an error: requests' read timeout on the
# engine's socket, or freezer.EngineStuck's own words
STALL_SIGNS = ("UnixHTTPConnectionPool", "did not answer `docker")


def stalled(error: str) -> bool:
    """Whether an error is an engine call that did not come back in time."""
    return any(sign in error for sign in STALL_SIGNS)


def dump_stacks(directory: Path, wait_s: float = 5.0) -> Path | None:
    """Have dockerd and containerd write their goroutine stacks (SIGUSR1) and move dockerd's into
    `directory`, the evidence a stalled engine leaves for its bug report; None when no engine here
    can be signalled."""
    engines = [p for p in psutil.process_iter(["name"])
               if p.info["name"] in ("dockerd", "containerd")]
    before = {p for d in STACK_DIRS for p in d.glob(STACKS_GLOB)}
    try:
        for p in engines:
            p.send_signal(signal.SIGUSR1)  # containerd writes its stacks into dockerd's log
    except (psutil.Error, PermissionError):
        return None
    deadline = time.monotonic() + wait_s
    while engines and time.monotonic() < deadline:
        if new := sorted({p for d in STACK_DIRS for p in d.glob(STACKS_GLOB)} - before):
            time.sleep(0.5)  # the engine is still writing it
            return Path(shutil.move(new[-1], directory / "engine-stacks.log"))
        time.sleep(0.2)
    return None
