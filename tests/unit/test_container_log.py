"""A node's log since its latest start: read from the engine's json-file at the offset where it
ended, with the engine's API when the file is not there or was rotated."""

from __future__ import annotations

import json

from harness import container_log


class Container:
    """The two things container_log asks of a docker-py container: its attrs and
    `logs(since=...)`."""

    def __init__(self, log_path: str) -> None:
        self.attrs = {"LogPath": log_path}
        self.asked: list[float | None] = []

    def logs(self, since: float | None = None) -> bytes:
        self.asked.append(since)
        return b"through the API\n"


def append(path, *lines: str) -> None:
    with path.open("a") as f:
        f.writelines(json.dumps({"log": f"{line}\n", "stream": "stdout", "time": "t"}) + "\n"
                     for line in lines)


def test_only_the_lines_after_the_mark_are_read_from_the_file(tmp_path):
    log = tmp_path / "c-json.log"
    append(log, "first start", "Kafka Server started")
    c = Container(str(log))
    at = container_log.mark(c)
    append(log, "second start")
    assert container_log.since(c, at) == "second start\n"
    with log.open("a") as f:
        f.write('{"log": "half a li')  # the engine is still writing this one
    assert container_log.since(c, at) == "second start\n" and c.asked == []


def test_the_api_when_the_log_is_elsewhere_or_was_rotated(tmp_path):
    log = tmp_path / "c-json.log"
    append(log, "a long first life")
    c = Container(str(log))
    at = container_log.mark(c)
    log.write_text("")  # rotated: shorter than the mark
    assert container_log.since(c, at) == "through the API\n" and c.asked == [at.since]
    elsewhere = Container("")  # another log driver: no file on this host
    assert container_log.mark(elsewhere).path is None
    assert container_log.since(elsewhere, container_log.mark(elsewhere)) == "through the API\n"
    assert container_log.mark().path is None  # before the container exists: its whole log is new
