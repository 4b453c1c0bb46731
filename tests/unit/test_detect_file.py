"""DETECTION.md keeps every row, harness-error line and traced line across detects that each rewrite
it."""

from __future__ import annotations

import signal
from types import SimpleNamespace

import pytest

from bench import detect
from contracts import signals
from contracts.versions import DEFAULT_VERSION


def test_rows_and_harness_errors_survive_a_rewrite(tmp_path, monkeypatch):
    monkeypatch.setattr(detect, "OUT", tmp_path / "DETECTION.md")
    row = detect.Row("acks-all-leader-kill", "-", runs=3, errors=1, measured="2026-11-23")
    error = ("- acks-all-leader-kill seed 2 (2026-11-23): ClusterError: Brokers [2] did not "
             "register within 60s")
    # a traced bullet written by hand over two lines keeps its second
    traced = ["- acks-all-leader-kill seed 1: lost-write,", "  docs/findings/x"]
    detect.write({row.name: row.line()}, [error], "make detect", 3.0, done=True, traced=traced)
    assert detect.kept() == ({row.name: row.line()}, [error], traced)
    detect.write({row.name: row.line()}, [], "make detect", 3.0, done=True)
    assert "## Harness errors" not in detect.OUT.read_text() and detect.kept()[1:] == ([], [])


def test_a_regression_asked_of_one_version_runs_each_seed_once(tmp_path, monkeypatch):
    ran = []

    def fake_run(s, root):
        ran.append((s.name, s.seed))
        return SimpleNamespace(result=None)

    monkeypatch.setattr(detect, "run_and_check", fake_run)
    rows: dict[str, str] = {}
    detect.run_rows("kafka20732-tiered-retention-fresh-leader", 2, tmp_path, rows, [], False,
                    lambda: None, ("4.3.2", None))
    assert ran == [("kafka20732-tiered-retention-fresh-leader[version=4.3.2]", 0),
                   ("kafka20732-tiered-retention-fresh-leader[version=4.3.2]", 1)]
    assert list(rows) == ["kafka20732-tiered-retention-fresh-leader[version=4.3.2] on 4.3.2"]


def test_a_row_names_the_release_it_ran_on(tmp_path, monkeypatch):
    """A new default starts rows of its own instead of adding its seeds to the last default's."""
    monkeypatch.setattr(detect, "run_and_check", lambda s, root: SimpleNamespace(result=None))
    rows: dict[str, str] = {}
    for name in ("acks-all-leader-kill", "migrate-zk-to-kraft"):
        detect.run_rows(name, 1, tmp_path, rows, [], False, lambda: None)
    detect.run_rows("txn-stale-requests", 1, tmp_path, rows, [], False, lambda: None,
                    (None, "java"))
    assert list(rows) == [f"acks-all-leader-kill on {DEFAULT_VERSION}",
                          "migrate-zk-to-kraft on 3.9.2",
                          f"txn-stale-requests on {DEFAULT_VERSION} with java"]


def test_a_signal_ends_detect_instead_of_counting_a_harness_error(tmp_path, monkeypatch):
    ran = []

    def cut_short(s, root):
        # the run's cleanup after a SIGTERM failed with an error of its own
        ran.append(s.seed)
        signals.SIGNALLED.append(signal.SIGTERM)
        raise RuntimeError("teardown cut short")

    monkeypatch.setattr(signals, "SIGNALLED", [])
    monkeypatch.setattr(detect, "run_and_check", cut_short)
    rows: dict[str, str] = {}
    errors: list[str] = []
    with pytest.raises(RuntimeError):
        detect.run_rows("acks-all-leader-kill", 3, tmp_path, rows, errors, False, lambda: None)
    assert ran == [0] and rows == {} and errors == []
