"""Files of a container, read through the engine's archive endpoint (a plain HTTP body, read a
block at a time, never whole in memory), and one written the same way."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import tarfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

import docker.errors
from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_fixed

from contracts.errors import ClusterError

COPY_BLOCK = 1 << 20  # bytes a copied-out file is written in


class _Chunks(io.RawIOBase):
    """The engine's answer, an iterator of byte chunks, read as a stream."""

    def __init__(self, chunks) -> None:
        self._chunks, self._chunk, self._at = iter(chunks), memoryview(b""), 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while self._at == len(self._chunk):
            chunk = next(self._chunks, None)
            if chunk is None:
                return 0
            self._chunk, self._at = memoryview(chunk), 0
        n = min(len(buffer), len(self._chunk) - self._at)
        buffer[:n] = self._chunk[self._at:self._at + n]
        self._at += n
        return n


@contextlib.contextmanager
def archived(container, path: str) -> Iterator[IO[bytes] | None]:
    """A container's file as a stream. (`docker exec` output is framed, and docker-py can lose a
    frame boundary in a long binary one: "120 is not a valid stream".) None: the archive holds no
    file."""
    chunks, _ = container.get_archive(path)
    with tarfile.open(fileobj=io.BufferedReader(_Chunks(chunks)), mode="r|") as tar:
        member = tar.next()
        yield tar.extractfile(member) if member else None


def read_file(container, path: str) -> bytes:
    """A file's bytes. The engine sizes the archive by the file it finds before opening the one
    it sends: a file replaced by rename meanwhile comes cut short, or breaks the archive
    (tarfile.ReadError)."""
    with archived(container, path) as src:
        return src.read() if src else b""


def read_json(read: Callable[[], bytes], attempts: int, wait_s: float) -> dict | None:
    """A JSON file given by `read` (None when it is missing), read again up to `attempts` times
    while a replacement cuts it short or breaks its archive (see `read_file`); the last error is
    raised."""
    def parsed() -> dict | None:
        try:
            return json.loads(read())
        except docker.errors.NotFound:
            return None
    retrying = Retrying(stop=stop_after_attempt(attempts), wait=wait_fixed(wait_s), reraise=True,
                        retry=retry_if_exception_type((ValueError, tarfile.ReadError)))
    return retrying(parsed)


def copy_file(container, path: str, dest: Path) -> None:
    """A file streamed to `dest` on this host (a segment tar of an hours-long run is gigabytes: it
    never sits in memory)."""
    with archived(container, path) as src, dest.open("wb") as out:
        if src is not None:
            shutil.copyfileobj(src, out, COPY_BLOCK)


def put_file(container, directory: str, name: str, data: bytes) -> None:
    """Write one file into a container's directory (stopped or running), through the engine's
    archive endpoint."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo(name)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    if not container.put_archive(directory, buf.getvalue()):
        raise ClusterError(f"the engine did not write {directory}/{name} in {container.name}")
