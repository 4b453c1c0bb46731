"""Teardown never hides why a run failed, and a container the engine is already removing counts as
removed."""

from __future__ import annotations

import signal

import docker
import pytest
import requests

from contracts import signals
from harness import node as node_module
from harness.cluster import Cluster, ClusterSpec
from harness.node import KafkaNode


def _api_error(status: int, message: str) -> docker.errors.APIError:
    response = requests.Response()
    response.status_code = status
    return docker.errors.APIError(f"{status} Client Error", response=response, explanation=message)


class _Container:
    """A running container as the node sees it."""

    id = "c0ffee"
    status = "running"

    def reload(self) -> None:
        pass


class _Engine:
    """An engine that answers `error` when asked to remove a container."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    def remove_container(self, container_id: str, **_) -> None:
        raise self.error


def _node(error: Exception, monkeypatch) -> KafkaNode:
    monkeypatch.setattr(node_module, "_engine", lambda: _Engine(error))
    node = KafkaNode.__new__(KafkaNode)  # no engine needed: only remove() is exercised
    node._container = _Container()
    node.alias = "kafka-1"
    return node


def test_a_container_already_being_removed_is_removed(monkeypatch):
    _node(_api_error(409, "removal of container kchaos-x-kafka-1 is already in progress"),
          monkeypatch).remove()


def test_other_engine_errors_on_remove_are_raised(monkeypatch):
    with pytest.raises(docker.errors.APIError):
        _node(_api_error(500, "driver failed"), monkeypatch).remove()


def test_a_failed_teardown_is_noted_on_the_failure_it_would_have_hidden(monkeypatch):
    cluster = Cluster(ClusterSpec(brokers=3))

    def broken_stop() -> None:
        raise RuntimeError("engine went away")

    monkeypatch.setattr(cluster, "stop", broken_stop)
    with pytest.raises(ValueError, match="broker 2 never came back") as failure:
        try:
            raise ValueError("broker 2 never came back")
        except ValueError as exc:
            cluster.__exit__(type(exc), exc, exc.__traceback__)
            raise
    assert failure.value.__notes__ == ["teardown also failed: RuntimeError: engine went away"]
    # with nothing to hide, it is the error
    with pytest.raises(RuntimeError, match="engine went away"):
        cluster.__exit__(None, None, None)


def test_a_failed_start_keeps_its_error_when_teardown_fails_too(monkeypatch):
    cluster = Cluster(ClusterSpec(brokers=3))

    def no_registration() -> None:
        raise TimeoutError("broker 1 did not register")

    def broken_stop() -> None:
        raise RuntimeError("engine went away")

    monkeypatch.setattr(cluster, "start", no_registration)
    monkeypatch.setattr(cluster, "stop", broken_stop)
    try:
        with pytest.raises(TimeoutError, match="did not register") as failure, cluster:
            pass
    finally:
        cluster._signals.close()  # the broken stop skipped it
    assert failure.value.__notes__ == ["teardown also failed: RuntimeError: engine went away"]


def test_signal_handlers_are_restored_when_the_engine_cannot_be_asked_what_is_left(monkeypatch):
    before = signal.getsignal(signal.SIGTERM)
    cluster = Cluster(ClusterSpec(brokers=3))
    cluster._signals.enter_context(signals.handled(unless_caller=True))
    assert signal.getsignal(signal.SIGTERM) is not before

    def unreachable(_run_id: str) -> None:
        raise docker.errors.DockerException("Error while fetching server API version")

    monkeypatch.setattr("harness.cluster.labels.clean", unreachable)
    with pytest.raises(docker.errors.DockerException):
        cluster.stop()
    assert signal.getsignal(signal.SIGTERM) is before
