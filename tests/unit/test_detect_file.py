"""DETECTION.md keeps every row, harness-error line and traced line across detects that each rewrite
it."""

from __future__ import annotations

from bench import detect


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
