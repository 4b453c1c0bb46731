"""A container's log since a start began, read where the engine keeps it on this host (the engine's
own `logs --since` scans the whole log file on every call, which grows with every restart of an
hours-long run), and the lines where Kafka ended its own process."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

# What Kafka logs when it ends its own process: the fault handler of KRaft's threads, and the fatal
# exits of a broker or a controller (a SIGKILL or SIGTERM the harness sends logs none of these)
SELF_EXITS = ("Encountered fatal fault", "Exiting Kafka due to fatal exception",
              "Fatal error during broker startup", "Fatal error during controller startup",
              "Fatal error during KafkaServer startup")
EXIT_LINE_CHARS = 300


@dataclass(frozen=True)
class Mark:
    """Where a container's log ended when a start began: a byte offset in its json-file on this host
    (None when the engine keeps it elsewhere) and the time, for the engine's API."""

    path: Path | None
    offset: int
    since: float


def mark(container=None) -> Mark:
    """The log's end now (a docker-py container, or None before it exists: its whole log is then
    new)."""
    log_path = container.attrs.get("LogPath") if container is not None else None
    path = Path(log_path) if log_path else None
    try:
        return Mark(path, path.stat().st_size if path else 0, time.time())
    except OSError:
        return Mark(None, 0, time.time())


def since(container, at: Mark) -> str:
    """What the container printed since `at`: from the json-file's offset when readable and not
    rotated, else through the engine's API."""
    if at.path is not None:
        try:
            with at.path.open("rb") as f:
                if f.seek(0, 2) >= at.offset:
                    f.seek(at.offset)
                    return "".join(json.loads(line)["log"] for line in f if line.endswith(b"\n"))
        except (OSError, ValueError, KeyError):
            pass
    return container.logs(since=at.since or None).decode(errors="replace")


def self_exits(text: str) -> list[str]:
    """Each line of a node's log where Kafka ended its own process, with the exception that caused
    it (the line after), capped."""
    lines = text.splitlines()
    return [" ".join(x.strip() for x in lines[i:i + 2])[:EXIT_LINE_CHARS]
            for i, line in enumerate(lines) if any(e in line for e in SELF_EXITS)]
