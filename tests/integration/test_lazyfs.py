"""lazyfs, the filesystem under a power-loss broker, mounted on this host: what an fsync kept
survives a power loss, and nothing else does."""

from __future__ import annotations

import errno
import json
import mmap
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness import lazydisk

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounting FUSE with mount(2) needs root")


@dataclass
class Mounted:
    disk: Path
    mnt: Path
    socket: Path

    def ctl(self, command: str) -> dict:
        out = subprocess.run([str(lazydisk.binary()), "ctl", str(self.socket), command],
                             capture_output=True, text=True, check=True).stdout
        return json.loads(out)

    def write(self, name: str, data: bytes, at: int | None = None, sync: bool = False) -> None:
        fd = os.open(self.mnt / name, os.O_RDWR | os.O_CREAT)
        try:
            os.pwrite(fd, data, os.fstat(fd).st_size if at is None else at)
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)

    def after_power_loss(self, name: str) -> bytes:
        return (self.disk / name).read_bytes()


@pytest.fixture
def lazyfs(tmp_path):
    disk, mnt, socket = tmp_path / "disk", tmp_path / "mnt", tmp_path / "ctl.sock"
    disk.mkdir()
    mnt.mkdir()
    daemon = subprocess.Popen([str(lazydisk.binary()), "mount", str(disk), str(mnt), str(socket)])
    try:
        deadline = time.monotonic() + 10
        while not socket.exists():
            assert daemon.poll() is None and time.monotonic() < deadline, "lazyfs did not mount"
            time.sleep(0.05)
        yield Mounted(disk, mnt, socket)
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)
        daemon.kill()
        daemon.wait()


def test_a_power_loss_keeps_what_was_fsynced_and_drops_the_rest(lazyfs):
    lazyfs.write("log", b"A" * 5000, sync=True)
    lazyfs.write("log", b"B" * 3000)
    lazyfs.write("log", b"C" * 10, at=100)
    lazyfs.write("new", b"N" * 700)
    assert lazyfs.ctl("dirty") == {"dirty": {"files": 2, "bytes": 3000 + 10 + 700, "torn": 0}}
    assert lazyfs.ctl("poweroff")["loss"] == {"files": 2, "bytes": 3000 + 10 + 700, "torn": 0}
    assert lazyfs.after_power_loss("log") == b"A" * 5000
    assert lazyfs.after_power_loss("new") == b""


def test_a_rename_is_durable_and_an_fsync_before_it_keeps_the_data(lazyfs):
    lazyfs.write("checkpoint.tmp", b"offsets", sync=True)
    (lazyfs.mnt / "checkpoint.tmp").rename(lazyfs.mnt / "checkpoint")
    lazyfs.ctl("poweroff")
    assert lazyfs.after_power_loss("checkpoint") == b"offsets"


def test_a_truncate_is_durable_but_the_unsynced_bytes_it_keeps_read_as_zeros(lazyfs):
    lazyfs.write("index", b"I" * 100, sync=True)
    lazyfs.write("index", b"J" * 100)
    os.truncate(lazyfs.mnt / "index", 8192)
    lazyfs.write("shrunk", b"S" * 1000, sync=True)
    os.truncate(lazyfs.mnt / "shrunk", 10)
    lazyfs.ctl("poweroff")
    assert lazyfs.after_power_loss("index") == b"I" * 100 + bytes(8092)
    assert lazyfs.after_power_loss("shrunk") == b"S" * 10


def test_msync_keeps_a_mapped_page_and_an_unsynced_one_is_lost(lazyfs):
    fd = os.open(lazyfs.mnt / "mapped", os.O_RDWR | os.O_CREAT)
    os.ftruncate(fd, 2 * mmap.PAGESIZE)
    os.fsync(fd)
    with mmap.mmap(fd, 2 * mmap.PAGESIZE) as m:
        m[0:4] = b"KEPT"
        m.flush()
        m[mmap.PAGESIZE:mmap.PAGESIZE + 4] = b"LOST"
    os.close(fd)
    lazyfs.ctl("poweroff")
    data = lazyfs.after_power_loss("mapped")
    assert data[:4] == b"KEPT" and data[mmap.PAGESIZE:mmap.PAGESIZE + 4] == bytes(4)


def test_a_torn_power_loss_keeps_less_than_a_page_of_the_unsynced_tail(lazyfs):
    tail = bytes(range(256)) * 40
    lazyfs.write("log", b"F" * 50, sync=True)
    lazyfs.write("log", tail)
    loss = lazyfs.ctl("poweroff-torn")["loss"]
    data = lazyfs.after_power_loss("log")
    kept = len(data) - 50
    assert data[:50] == b"F" * 50 and 0 <= kept < 4096 and data[50:] == tail[:kept]
    assert loss == {"files": 1, "bytes": len(tail) - kept, "torn": int(kept > 0)}


def test_writes_after_the_power_loss_are_dropped(lazyfs):
    lazyfs.write("log", b"before", sync=True)
    lazyfs.ctl("poweroff")
    lazyfs.write("log", b"after")
    assert lazyfs.after_power_loss("log") == b"before"


def test_a_full_disk_refuses_writes_until_healed(lazyfs):
    lazyfs.write("log", b"before", sync=True)
    assert lazyfs.ctl("full") == {"full": True}
    with pytest.raises(OSError) as refused:
        lazyfs.write("log", b"refused")
    assert refused.value.errno == errno.ENOSPC
    assert lazyfs.ctl("heal") == {"faults": {"refused": 1, "slowed": 0}}
    lazyfs.write("log", b"after", sync=True)
    assert lazyfs.after_power_loss("log") == b"beforeafter"


def test_a_slow_disk_delays_each_write_and_fsync(lazyfs):
    assert lazyfs.ctl("slow 200") == {"slow_ms": 200}
    began = time.monotonic()
    lazyfs.write("log", b"slow", sync=True)
    assert time.monotonic() - began >= 0.4
    assert lazyfs.ctl("heal") == {"faults": {"refused": 0, "slowed": 2}}
