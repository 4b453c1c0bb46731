"""lazyfs, the FUSE filesystem a broker's data directory sits on when a scenario cuts its power:
built once from harness/docker/lazyfs with Go, and mounted into the broker's container read-only."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from contracts.describe import progress
from contracts.errors import ClusterError, ImageError
from harness import gobuild

IN_CONTAINER = "/opt/kchaos/lazyfs"
SOCKET = "/run/lazyfs.sock"
FUSE_DEVICE = "/dev/fuse"


@dataclass(frozen=True)
class Loss:
    """What one broker's power loss dropped: files put back to their last fsync, the bytes written
    to them since, files torn."""

    files: int
    bytes: int
    torn: int


@dataclass(frozen=True)
class PowerCut:
    """A power loss of several brokers: each one's loss, and the time between the first and the last
    to stop."""

    losses: dict[int, Loss]
    spread_s: float


def binary(say=progress) -> Path:
    """The lazyfs executable for the current sources, built on first use."""
    if not Path(FUSE_DEVICE).exists():
        raise ImageError(f"{FUSE_DEVICE} is missing: power-loss needs the kernel's FUSE (modprobe "
                         "fuse)")
    return gobuild.binary("lazyfs", "the power-loss filesystem", say)


def run_args() -> dict:
    """What a container needs, beyond the binary, to mount lazyfs: the FUSE device, CAP_SYS_ADMIN
    for mount(2), and where AppArmor is on, a profile that allows mounts."""
    args: dict = {"devices": [f"{FUSE_DEVICE}:{FUSE_DEVICE}:rwm"], "cap_add": ["SYS_ADMIN"]}
    if _apparmor_on():
        args["security_opt"] = ["apparmor=unconfined"]
    return args


def _apparmor_on() -> bool:
    flag = Path("/sys/module/apparmor/parameters/enabled")
    return flag.exists() and flag.read_text().strip() == "Y"


def answer(text: str, alias: str) -> dict:
    """The JSON lazyfs's control socket answered, or a ClusterError naming the broker."""
    try:
        reply = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ClusterError(f"lazyfs on {alias} answered {text.strip()[-300:]!r}") from exc
    if reply.get("error"):
        raise ClusterError(f"lazyfs on {alias}: {reply['error']}")
    return reply
