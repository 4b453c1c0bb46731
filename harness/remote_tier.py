"""The remote tier the brokers share: a host directory that Kafka's LocalTieredStorage writes
through, with lazyfs between them when faults must refuse or slow its writes; and the segments it
holds."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from contracts.errors import ClusterError
from contracts.history import RemoteSegment
from harness import lazydisk

ROOT = "kafka-tiered-storage"  # LocalTieredStorage's directory under its `dir`
PARTITION_DIR = re.compile(r"^(?P<topic>[a-zA-Z0-9._-]+)-(?P<partition>\d+)-[a-zA-Z0-9_-]{22}$")
SEGMENT_FILE = re.compile(r"^(?P<base>\d+)-(?P<segment>[a-zA-Z0-9_-]{22})\.log$")
PREFIX = "kchaos-remote-"  # of the host directory, then the run id
MOUNT_WAIT_S = 10.0


class SharedTier:
    """A run's remote tier on the host: `backing` holds the files; the brokers mount `mounted`,
    which is lazyfs over `backing` when `lazyfs` is given, else `backing` itself."""

    def __init__(self, run_id: str, lazyfs: Path | None = None) -> None:
        self.root = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{run_id}-"))
        self.backing = self.root / "disk"
        self.backing.mkdir()
        self.mounted = self.root / "tier" if lazyfs else self.backing
        self._lazyfs, self._socket = lazyfs, self.root / "lazyfs.sock"
        self._process: subprocess.Popen | None = None

    def start(self) -> SharedTier:
        """Mount lazyfs over the backing directory (when the tier has one), in a session of its own,
        and wait for its control socket."""
        if not self._lazyfs:
            return self
        self.mounted.mkdir()
        self._process = subprocess.Popen(
            [str(self._lazyfs), "mount", str(self.backing), str(self.mounted), str(self._socket)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            start_new_session=True)
        deadline = time.monotonic() + MOUNT_WAIT_S
        while not self._socket.exists():
            if self._process.poll() is not None or time.monotonic() > deadline:
                err = self._process.stderr.read().decode() if self._process.stderr else ""
                raise ClusterError(f"lazyfs did not mount the remote tier at {self.mounted} within "
                                   f"{MOUNT_WAIT_S:.0f} s: {err.strip()[-300:]}")
            time.sleep(0.05)
        return self

    def lazyfs(self, command: str) -> dict:
        """Send the tier's lazyfs a command (full, "slow MS", heal) and return its answer."""
        if not self._lazyfs:
            raise ClusterError("the remote tier has no lazyfs; remote faults need it")
        done = subprocess.run([str(self._lazyfs), "ctl", str(self._socket), command],
                              capture_output=True, text=True, timeout=30)
        return lazydisk.answer(done.stdout or done.stderr, "the remote tier")

    def stop(self) -> None:
        """Unmount lazyfs (it exits then) and remove the directory; safe to call twice."""
        if self._process is not None:
            release(self.root)
            try:
                self._process.wait(10)
            except subprocess.TimeoutExpired:
                self._process.kill()
            self._process = None
        shutil.rmtree(self.root, ignore_errors=True)

    def segments(self, topics: set[str]) -> list[RemoteSegment]:
        """The segments of `topics` the tier holds now, read from the backing directory (a file
        deleted while it is listed is left out)."""
        found = []
        root = self.backing / ROOT
        for part in root.iterdir() if root.is_dir() else ():
            p = PARTITION_DIR.match(part.name)
            if not p or p["topic"] not in topics:
                continue
            for f in part.iterdir():
                s = SEGMENT_FILE.match(f.name)
                try:
                    size = f.stat().st_size if s else -1
                except FileNotFoundError:
                    continue
                if s:
                    found.append(RemoteSegment(p["topic"], int(p["partition"]), int(s["base"]),
                                               s["segment"], size))
        return found


def release(root: Path) -> None:
    """Lazily unmount whatever is mounted under a tier's directory (its lazyfs then exits)."""
    for line in Path("/proc/mounts").read_text().splitlines():
        point = line.split(" ")[1]
        if point.startswith(f"{root}/"):
            subprocess.run(["umount", "-l", point], capture_output=True, timeout=30)


def release_run(run_id: str | None = None) -> None:
    """What a run (or every run) left of its remote tier: mounts, then the directory."""
    for root in Path(tempfile.gettempdir()).glob(f"{PREFIX}{run_id}-*" if run_id else f"{PREFIX}*"):
        release(root)
        shutil.rmtree(root, ignore_errors=True)
