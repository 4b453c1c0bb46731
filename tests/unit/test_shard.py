"""bench.shard: a slice's runs trimmed to what a merge and a reader need, and the slice picked."""

from __future__ import annotations

import pytest

from bench import shard
from contracts.results import RunResult


def run_dir(work, scenario: str, run: str, **fields) -> None:
    d = work / scenario / run
    (d / "history").mkdir(parents=True)
    RunResult(**({"scenario": scenario, "kafka": "4.3.1", "seed": 42, "run_dir": str(d),
                  "verdict": True} | fields)).save(d)
    for name in ("scenario.json", "schedule.json", "run.json", "report.html",
                 "history/sends.jsonl"):
        (d / name).write_text("{}")


def test_trim_keeps_the_results_and_a_report_only_where_the_run_failed_or_was_unknown(tmp_path):
    work, dest = tmp_path / "work", tmp_path / "kept"
    run_dir(work, "a", "1-42")
    run_dir(work, "a", "2-43", verdict=False, forbidden={"lost-write": 3})
    run_dir(work, "b", "3-42", verdict=None)
    assert shard.trim(work, dest) == 3
    kept = sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file())
    assert kept == [f"a/1-42/{n}" for n in sorted(shard.KEPT)] + \
        [f"a/2-43/{n}" for n in sorted([*shard.KEPT, "report.html"])] + \
        [f"b/3-42/{n}" for n in sorted([*shard.KEPT, "report.html"])]
    assert RunResult.load(dest / "a/2-43/results.json").forbidden == {"lost-write": 3}


def test_the_first_slice_not_kept_is_next_and_a_kept_one_is_not_run_again(tmp_path, monkeypatch,
                                                                          capsys):
    monkeypatch.chdir(tmp_path)
    runs = shard.COMPARISONS["upgrades"].runs
    (runs / "shard-1").mkdir(parents=True)
    assert shard.pick(["upgrades"])[2] == 2
    assert shard.pick(["upgrades", "3"])[2] == 3
    for argv, said in ((["upgrades", "1"], "shard-1 exists: slice 1 has run"),
                       (["upgrades", "10"], "Expected a slice from 1 to 9 but got K='10'"),
                       (["upgrade"], "Expected one of catalog, upgrades")):
        with pytest.raises(SystemExit) as exit_:
            shard.pick(argv)
        assert exit_.value.code == 2
        assert said in capsys.readouterr().err
