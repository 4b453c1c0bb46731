"""A Docker engine call that never comes back leaves the engine's own evidence beside the run."""

from __future__ import annotations

from harness import engine


def test_a_stalled_engine_call_keeps_the_engines_goroutine_stacks(tmp_path):
    read_timeout = ("ReadTimeout: UnixHTTPConnectionPool(host='localhost', port=None): Read timed "
                    "out. (read timeout=60)")
    stuck = ("EngineStuck: the Docker engine did not answer `docker pause kafka-3` within 30 s; "
             "its cgroup was thawed")
    assert engine.stalled(read_timeout) and engine.stalled(stuck)
    assert not engine.stalled("ClusterError: kafka-1 exited while starting")
    path = engine.dump_stacks(tmp_path)
    assert path == tmp_path / "engine-stacks.log" and "goroutine" in path.read_text()
    assert not list(engine.STACK_DIRS[0].glob(engine.STACKS_GLOB))  # moved, not left to pile up
