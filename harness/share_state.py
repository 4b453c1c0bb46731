"""A share group's state on the brokers (KIP-932): its group settings, and its share-partition start
offsets and lag as the release's own Admin client reads them."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ResourceType,
)

from contracts.paths import cache_dir
from harness.jars import JAVA_DIR, fetch_jars

READ_S = 60  # the Admin call's own timeouts are 30 s
SOURCE = JAVA_DIR / "ShareOffsets.java"


class ShareStateError(RuntimeError):
    """The share group's offsets could not be read."""


@dataclass(frozen=True)
class SharePartition:
    """One share-partition: its start offset, and its lag (-1: the broker did not say)."""

    topic: str
    partition: int
    start: int
    lag: int


def configure_group(admin: AdminClient, group: str, settings: dict[str, str]) -> None:
    """Set a share group's dynamic group configs (e.g. share.auto.offset.reset) before it exists."""
    entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET)
               for k, v in settings.items()]
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=entries)
    admin.incremental_alter_configs([resource])[resource].result(30)


def _compiled(version: str, libs: Path) -> Path:
    """harness/java/ShareOffsets.java compiled against the release's jars, once (a source launch
    compiles on every call)."""
    classes = cache_dir() / "kafka" / version / "share-offsets"
    if not (classes / "ShareOffsets.class").is_file():
        tmp = classes.with_name(f"{classes.name}.{os.getpid()}.tmp")
        done = subprocess.run(["javac", "-cp", f"{libs}/*", "-d", str(tmp), str(SOURCE)],
                              capture_output=True, text=True, timeout=READ_S)
        if done.returncode != 0:
            raise ShareStateError(f"compiling {SOURCE.name} against Kafka {version} failed: "
                                  f"{done.stderr.strip()[-300:]}")
        shutil.rmtree(classes, ignore_errors=True)
        tmp.replace(classes)
    return classes


def share_offsets(version: str, bootstrap: str, group: str) -> list[SharePartition]:
    """Every share-partition of the group, from harness/java/ShareOffsets.java run on the
    release's jars (librdkafka has no call for it)."""
    libs = fetch_jars(version)
    classpath = f"{libs}/*:{_compiled(version, libs)}"
    done = subprocess.run(["java", "-cp", classpath, "ShareOffsets", bootstrap, group],
                          capture_output=True, text=True, timeout=READ_S)
    if done.returncode != 0:
        raise ShareStateError(f"reading share group {group!r}'s offsets failed: "
                              f"{done.stderr.strip()[-300:]}")
    rows = [line.split() for line in done.stdout.splitlines() if line.count(" ") == 3]
    return [SharePartition(t, int(p), int(start), int(lag)) for t, p, lag, start in rows]
