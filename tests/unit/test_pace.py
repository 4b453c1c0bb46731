"""The pace check: a fault line whose ops outlast `every` is refused only when planned ops would not
fire before the run ends, with the broker restart time this machine measured for the scenario's
version and metadata mode."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contracts import measured
from contracts.errors import UsageError
from kchaos.catalog import _unreached, contention, fault_spec, pace_problems, validate

KILL = {"fault": "kill", "target": "controller", "every": "20s", "for": "5s", "after": "5s"}


def scenario(metadata: str, duration: str = "60s", **kill: str) -> dict:
    return {"name": "pace", "kafka": {"version": "3.9.2", "metadata": metadata},
            "faults": [{**KILL, **kill}], "duration": duration}


def measure(mode: str, seconds: float, times: int = 3, after: measured.Stop = "kill") -> None:
    for _ in range(times):
        measured.record_restart("3.9.2", mode, after, seconds)


def test_a_line_that_drifts_late_but_fires_every_op_runs():
    measure("zookeeper", 16.0)  # each kill keeps its line busy 21 s, one more than every=20 s
    assert pace_problems(validate(scenario("zookeeper"), "s")) == []


def test_a_line_whose_drift_would_leave_ops_unfired_is_refused():
    measure("zookeeper", 16.0)
    with pytest.raises(UsageError,
                       match=r"faults\.0: kill keeps its line busy about 21 s \(for=5 s and broker "
                                         r"restarts of 16 s after a kill, measured here, Kafka "
                                         r"3\.9\.2 zookeeper\).* "
                                         r"so 9 of its 180 ops would not fire before the run ends; "
                                         r"use every >= 22 s"):
        validate(scenario("zookeeper", duration="3600s"), "s")


def test_restarts_are_measured_per_metadata_mode():
    measure("zookeeper", 40.0)
    assert restart_figures() == ((40.0, True), (measured.ASSUMED_RESTART_S, False))
    with pytest.raises(UsageError, match="1 of its 3 ops would not fire"):
        validate(scenario("zookeeper"), "s")
    validate(scenario("kraft"), "s")


def test_a_kill_line_is_planned_with_restarts_after_kills_and_a_rolling_restart_with_clean_ones():
    # slow restarts after clean stops do not slow a kill line's plan
    measure("kraft", 40.0, after="clean")
    assert pace_problems(validate(scenario("kraft"), "s")) == []
    rolling = {"fault": "rolling-restart", "every": "60s", "after": "5s"}
    with pytest.raises(UsageError,
                       match=r"rolling-restart keeps its line busy about 125 s \(for=5 s and "
                             r"broker "
                                         r"restarts of 40 s after a clean stop, measured here"):
        validate({**scenario("kraft", duration="300s"), "faults": [rolling]}, "s")
    measure("kraft", 10.0, times=10, after="clean")
    assert pace_problems(validate({**scenario("kraft", duration="300s"), "faults": [rolling]},
                                  "s")) == []


def restart_figures() -> tuple[tuple[float, bool], tuple[float, bool]]:
    return measured.restart_seconds("3.9.2", "zookeeper", "kill"), measured.restart_seconds(
        "3.9.2", "kraft", "kill")


def test_unreached_counts_ops_that_start_too_late_to_hold():
    line = fault_spec(fault="kill", every="7s", for_="2s", after="0s")
    # starts 0, 12, ..., 48; then 60, 72, 84, 96
    assert _unreached(line, busy=12.0, duration=60.0) == (9, 4)


@given(every=st.floats(1, 60), jitter_share=st.floats(0, 0.9), busy_share=st.floats(0, 1),
       hold=st.floats(0, 30), after=st.floats(0, 60), duration=st.floats(1, 600))
def test_a_line_that_keeps_pace_misses_nothing(every, jitter_share, busy_share, hold, after,
                                               duration):
    line = fault_spec(fault="pause", every=every, jitter=every * jitter_share, for_=hold,
                      after=after)
    gap = max(0.5, every - line.jitter)
    assert _unreached(line, busy=gap * busy_share, duration=duration)[1] == 0


def lines(*faults: dict, duration: str = "75s") -> dict:
    return {"name": "contend", "kafka": {"version": "3.9.2", "metadata": "kraft"},
            "faults": list(faults), "duration": duration}


def test_lines_that_contend_for_brokers_are_warned_of_and_lines_aimed_apart_are_not():
    measure("kraft", 10.0)  # each kill holds its broker 5 s and waits 10 s for it to return
    kill, pause = {"fault": "kill", "every": "18s", "for": "5s"}, {
        "fault": "pause", "every": "11s", "for": "4s"}
    # kills at 5, 23, 41, 59 s hold a broker until 20, 38, 56, 74 s; of the pauses at 5, 16, ... 71
    # s, six start while a kill holds one of the three brokers, each picking the same one by a
    # chance of 1/3
    assert contention(validate(lines(kill, pause), "s")) == [
        "faults.1: about 2 of its 7 pause ops would find their brokers held by faults.0 (kill) and "
        "be skipped; space the lines out or aim them apart"]
    assert contention(validate(lines({**kill, "target": [1]}, {**pause, "target": [2]}), "s")) == []
    leader_then_followers = lines({**kill, "target": "leader"}, {**pause, "target": "followers"})
    # one moment's leader is never a follower
    assert contention(validate(leader_then_followers, "s")) == []
    assert contention(validate(lines({**kill, "every": "60s"}, {**pause, "every": "30s"}),
                               "s")) == []


def test_an_upgrade_holds_one_broker_at_a_time_and_is_never_the_line_skipped():
    measure("kraft", 10.0)  # the roll: 3 brokers, each back 10 s after its stop, from 5 s to 35 s
    upgrade = {"fault": "upgrade", "to": "4.4.0", "for": "0s"}
    kill = {"fault": "kill", "every": "12s", "for": "2s"}
    # kills at 5, 17 and 29 s start while the roll holds one broker of three: a chance of 1/3 each
    assert contention(validate(lines(upgrade, kill), "s")) == [
        "faults.1: about 1 of its 6 kill ops would find their brokers held by faults.0 (upgrade) "
        "and be skipped; space the lines out or aim them apart"]
