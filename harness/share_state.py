"""A share group's state on the brokers (KIP-932): its group settings, and its share-partition start
offsets and lag as the release's own Admin client reads them."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass

from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ResourceType,
)

from harness.jars import JAVA_DIR, fetch_jars

READ_S = 120  # the Admin call's own timeouts are 30 s; the source launcher compiles first


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


def share_offsets(version: str, bootstrap: str, group: str) -> list[SharePartition]:
    """Every share-partition of the group, from harness/java/ShareOffsets.java run on the
    release's jars (librdkafka has no call for it)."""
    libs = fetch_jars(version)
    done = subprocess.run(["java", "-cp", f"{libs}/*", str(JAVA_DIR / "ShareOffsets.java"),
                           bootstrap, group], capture_output=True, text=True, timeout=READ_S)
    if done.returncode != 0:
        raise ShareStateError(f"reading share group {group!r}'s offsets failed: "
                              f"{done.stderr.strip()[-300:]}")
    rows = [line.split() for line in done.stdout.splitlines() if line.count(" ") == 3]
    return [SharePartition(t, int(p), int(start), int(lag)) for t, p, lag, start in rows]
