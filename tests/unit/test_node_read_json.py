"""A node's JSON file read through the engine: read again while a replacement tears it, None when it
is missing."""

from __future__ import annotations

import tarfile

import docker.errors
import pytest

from harness.node import KafkaNode


def _node(monkeypatch, reads: list) -> tuple[KafkaNode, list]:
    """A node whose file reads give `reads` in turn (an exception is raised); the paths asked for
    are kept."""
    node, asked = KafkaNode("kafka-chaos/kafka:test", 1), []

    def read_file(path: str) -> bytes:
        asked.append(path)
        got = reads.pop(0)
        if isinstance(got, Exception):
            raise got
        return got
    monkeypatch.setattr(node, "read_file", read_file)
    return node, asked


def test_a_torn_read_and_a_broken_archive_are_read_again(monkeypatch):
    reads = [b'{"leaderEpoch": 3', tarfile.ReadError("unexpected end of data"),
             b'{"leaderEpoch": 3}']
    node, asked = _node(monkeypatch, reads)
    assert node.read_json("/q", attempts=5, wait_s=0) == {"leaderEpoch": 3}
    assert asked == ["/q"] * 3


def test_a_missing_file_is_none_at_once(monkeypatch):
    node, asked = _node(monkeypatch, [docker.errors.NotFound("no such file")])
    assert node.read_json("/q", attempts=5, wait_s=0) is None
    assert len(asked) == 1


def test_the_last_error_is_raised_after_the_last_try(monkeypatch):
    node, asked = _node(monkeypatch, [b'{"a"'] * 3)
    with pytest.raises(ValueError):
        node.read_json("/q", attempts=3, wait_s=0)
    assert len(asked) == 3
