"""Figures this machine measured that validation plans with: how long a broker of each version takes
to restart, per metadata mode (a ZooKeeper-mode broker killed waits out its old registration; a
KRaft one does not) and per how it stopped (a kill line is planned with restarts after kills, a
rolling restart with restarts after clean stops)."""

from __future__ import annotations

import json
import os
import statistics
from typing import Literal

from contracts.paths import cache_dir

KEEP = 10  # restarts remembered per version
ASSUMED_RESTART_S = 10.0  # before any restart of a version was measured here
# how the broker stopped before the restart: SIGKILL (or a crash), or a clean shutdown
Stop = Literal["kill", "clean"]


def _file():
    return cache_dir() / "restart-seconds.json"


def _load() -> dict[str, list[float]]:
    try:
        return json.loads(_file().read_text())
    except (OSError, ValueError):
        return {}


def _key(version: str, mode: str, after: Stop) -> str:
    return f"{version}:{mode}:after-{after}"


def restart_seconds(version: str, mode: str, after: Stop) -> tuple[float, bool]:
    """(seconds, measured): the median of this machine's last restarts of a version in a metadata
    mode after a kill or a clean stop, or an assumption."""
    seen = _load().get(_key(version, mode, after))
    return (round(statistics.median(seen), 1), True) if seen else (ASSUMED_RESTART_S, False)


def record_restart(version: str, mode: str, after: Stop, seconds: float) -> None:
    """Remember one restart's length (written whole, so concurrent writers lose a figure, never the
    file)."""
    data, key = _load(), _key(version, mode, after)
    data[key] = [*data.get(key, []), round(seconds, 2)][-KEEP:]
    path = _file()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data))
    tmp.replace(path)
