"""The cgroup freezer that `docker pause` drives, read and thawed from this host: the way out when
the engine hangs on a frozen container (seen in CI: `docker pause` froze a broker and never
returned, and every later call on that container waited behind it until the cgroup was thawed by
hand)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import requests.exceptions

from contracts.errors import ClusterError

ROOT = Path("/sys/fs/cgroup")
ENGINE_CALL_S = 30  # a pause, unpause or removal the engine has not answered by then is stuck


class EngineStuck(ClusterError):
    """The engine did not answer a freezer or removal call in time; the container's cgroup was
    thawed."""


def _controls(container_id: str, root: Path) -> list[tuple[Path, str, str]]:
    """A container's freeze control file under each layout Docker uses (cgroup v1 and v2, cgroupfs
    and systemd drivers), each with the values that thaw and freeze it."""
    scope = f"docker-{container_id}.scope"
    return [(root / "freezer" / "docker" / container_id / "freezer.state", "THAWED", "FROZEN"),
            (root / "freezer" / "system.slice" / scope / "freezer.state", "THAWED", "FROZEN"),
            (root / "docker" / container_id / "cgroup.freeze", "0", "1"),
            (root / "system.slice" / scope / "cgroup.freeze", "0", "1")]


def _set(container_id: str, root: Path, frozen: bool) -> bool:
    """Write the container's freeze control; True when it changed and this host may write it."""
    for control, thawed, froze in _controls(container_id, root):
        want = froze if frozen else thawed
        try:
            if (control.read_text().strip() == thawed) != frozen:
                return False
            control.write_text(want)
            return True
        except FileNotFoundError:
            continue
        except PermissionError:
            return False
    return False


def thaw(container_id: str, root: Path = ROOT) -> bool:
    """Thaw the container's cgroup; True when it was frozen (or freezing)."""
    return _set(container_id, root, frozen=False)


def freeze(container_id: str, root: Path = ROOT) -> bool:
    """Freeze the container's cgroup again, so that an engine which still counts it paused can
    unpause it (a thawed container's unpause fails with "container not paused"); True when it was
    thawed."""
    return _set(container_id, root, frozen=True)


def bounded(call: Callable[[], object], container_id: str, what: str, root: Path = ROOT) -> None:
    """Run an engine call made with an ENGINE_CALL_S client timeout; when it times out, thaw the
    container's cgroup (which lets the engine finish what it was stuck in) and raise EngineStuck."""
    try:
        call()
    except requests.exceptions.Timeout as exc:
        thawed = thaw(container_id, root)
        raise EngineStuck(f"the Docker engine did not answer `{what}` within {ENGINE_CALL_S} s; "
                          + ("its cgroup was frozen and has been thawed from this host" if thawed
                             else "its cgroup was not frozen")) from exc
