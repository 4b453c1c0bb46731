"""`kchaos history`: a run's rows as aligned text in time order, fault ops among them, like Jepsen's
history.txt."""

from __future__ import annotations

import pytest

from kchaos import cli
from kchaos.history_builder import MS, HistoryBuilder


def run_dir(tmp_path):
    h = HistoryBuilder(step_ns=100 * MS)
    h.send(0, 0, 0, 0).send(1, 0, 0, 1)  # at 0.0 and 0.1 s
    h.fault("kill", [2], planned_at=0.2)  # at 0.2 s, held 1 s
    h.send(0, 1, 0, offset=None, outcome="info", error="_MSG_TIMED_OUT")  # at 1.3 s
    h.poll("consumer-0", (0, 0, 0, 0), (0, 1, 1, 0))  # at 1.4 and 1.5 s
    return h.write_run(tmp_path / "run", {"name": "t"})


def history(capsys, *argv: str) -> list[str]:
    assert cli.main(["history", *argv]) == 0
    return capsys.readouterr().out.splitlines()


def test_rows_and_fault_ops_in_time_order_with_aligned_columns(tmp_path, capsys):
    out = history(capsys, str(run_dir(tmp_path)))
    assert [line.split()[:2] for line in out] == [
        ["0.000", "sends"], ["0.100", "sends"], ["0.200", "faults"], ["1.300", "sends"],
        ["1.400", "reads"], ["1.500", "reads"]]
    sends = [line for line in out if " sends " in line]
    assert len({line.index("offset=") for line in sends}) == 1  # aligned
    assert "t_complete=1.305 outcome=info error=_MSG_TIMED_OUT" in sends[2]
    fault = 'fault=kill targets=2 detail={"planned_at": 0.2} line=0 planned=0.200 outcome=fired'
    assert fault in out[2]
    assert out[4].endswith("reader=consumer-0 phase=live poll=1 topic=chaos partition=0 offset=0 "
                           "producer=0 seq=0 checksum_ok=True pos=0")


def test_around_a_moment_shows_only_its_window_and_table_picks_what_else_shows(tmp_path, capsys):
    run = str(run_dir(tmp_path))
    assert [line.split()[:2]
            for line in history(capsys, run, "--around", "1.35", "--window", "0.1")] == [
        ["1.300", "sends"], ["1.400", "reads"]]
    assert [line.split()[1] for line in history(capsys, run, "--table", "reads")] == [
        "faults", "reads", "reads"]


def test_an_unknown_table_is_one_clear_line_and_exit_2(tmp_path, capsys):
    assert cli.main(["history", str(run_dir(tmp_path)), "--table", "sends,replica"]) == 2
    assert "Expected tables among sends, txns" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["history"])
