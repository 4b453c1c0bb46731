"""A node never runs a `docker exec` and a pause at once (an exec racing a pause can hang runc), and
a firewall change skips a node a pause got to first."""

from __future__ import annotations

import threading
import time

from harness import node as node_module
from harness.node import KafkaNode

CALL_S = 0.2


class _Calls:
    """Every exec and engine call with when it began and ended."""

    def __init__(self) -> None:
        self.spans: list[tuple[str, float, float]] = []

    def timed(self, what: str) -> None:
        t0 = time.monotonic()
        time.sleep(CALL_S)
        self.spans.append((what, t0, time.monotonic()))


class _Container:
    id = "c0ffee"

    def __init__(self, calls: _Calls) -> None:
        self.calls, self.status = calls, "running"

    def reload(self) -> None:
        pass

    def exec_run(self, cmd, user: str) -> tuple[int, bytes]:
        self.calls.timed("exec")
        return 0, b""


class _Engine:
    def __init__(self, calls: _Calls, container: _Container) -> None:
        self.calls, self.container = calls, container

    def pause(self, container_id: str) -> None:
        self.calls.timed("pause")
        self.container.status = "paused"


def _node(monkeypatch) -> tuple[KafkaNode, _Calls]:
    calls = _Calls()
    node = KafkaNode("kafka-chaos/kafka:test", 1)
    node._container = _Container(calls)
    monkeypatch.setattr(node_module, "_engine", lambda: _Engine(calls, node._container))
    return node, calls


def test_an_exec_and_a_pause_never_overlap(monkeypatch):
    node, calls = _node(monkeypatch)
    execs = [threading.Thread(target=node.sh, args=("true",)) for _ in range(2)]
    for t in execs:
        t.start()
    time.sleep(CALL_S / 4)  # the first exec is under way when the pause comes
    node.pause()
    for t in execs:
        t.join()
    spans = sorted(calls.spans, key=lambda s: s[1])
    assert [s[0] for s in spans].count("pause") == 1
    assert all(a[2] <= b[1] for a, b in zip(spans, spans[1:], strict=False)), spans


def test_a_firewall_change_skips_a_node_paused_before_its_exec(monkeypatch):
    node, calls = _node(monkeypatch)
    pausing = threading.Thread(target=node.pause)
    with node._exec_or_freeze:  # the pause waits here, as behind an exec
        pausing.start()
        time.sleep(CALL_S / 4)
    pausing.join()
    assert node.sh_if_running("iptables -F") is None
    assert [s[0] for s in calls.spans] == ["pause"]
