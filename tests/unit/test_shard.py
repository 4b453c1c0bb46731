"""bench.shard: a slice's runs trimmed to what a merge and a reader need, and the slice picked."""

from __future__ import annotations

import shutil

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


def test_trim_keeps_what_a_merge_needs_of_each_run_and_not_its_report_history_or_logs(tmp_path):
    work, dest = tmp_path / "work", tmp_path / "kept"
    run_dir(work, "a", "1-42")
    run_dir(work, "a", "2-43", verdict=False, forbidden={"lost-write": 3})
    run_dir(work, "b", "3-42", verdict=None)
    (work / "junit-compare-4.3.1.xml").write_text("<testsuite/>")
    assert shard.trim(work, dest) == 3
    kept = sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file())
    assert kept == [f"{run}/{n}" for run in ("a/1-42", "a/2-43", "b/3-42")
                    for n in sorted(shard.KEPT)]
    assert RunResult.load(dest / "a/2-43/results.json").forbidden == {"lost-write": 3}


def test_a_run_that_did_not_pass_is_kept_whole_and_a_pass_is_not(tmp_path):
    work, into = tmp_path / "work", tmp_path / "unpassed"
    run_dir(work, "a", "1-42")
    run_dir(work, "a", "2-43", verdict=False, forbidden={"lost-write": 3})
    run_dir(work, "b", "3-42", verdict=None)
    assert shard.keep_unpassed(work, into) == [into / "a/2-43", into / "b/3-42"]
    assert (into / "b/3-42/history/sends.jsonl").exists() and not (into / "a/1-42").exists()


def test_the_first_slice_not_kept_is_next_and_a_kept_one_is_not_run_again(tmp_path, monkeypatch,
                                                                          capsys):
    monkeypatch.chdir(tmp_path)
    runs = shard.COMPARISONS["upgrades"].runs
    (runs / "shard-2").mkdir(parents=True)  # unpacked, or trimmed and never packed: not kept
    runs.joinpath("shard-1.tar.xz").write_bytes(b"")
    assert shard.pick(["upgrades"])[2] == 2
    assert shard.pick(["upgrades", "3"])[2] == 3
    for argv, said in ((["upgrades", "1"], "shard-1.tar.xz exists: slice 1 has run"),
                       (["upgrades", "10"], "Expected a slice from 1 to 9 or merge but got K='10'"),
                       (["upgrade"], "Expected one of catalog, upgrades")):
        with pytest.raises(SystemExit) as exit_:
            shard.pick(argv)
        assert exit_.value.code == 2
        assert said in capsys.readouterr().err


def test_when_each_slice_holds_one_seed_the_first_seed_is_whole_before_the_next(tmp_path,
                                                                               monkeypatch):
    monkeypatch.chdir(tmp_path)
    c = shard.COMPARISONS["kafka-4.4"]  # 50 slices, 5 seeds: slice K holds seed 42 + (K - 1) % 5
    assert c.order()[:11] == [1, 6, 11, 16, 21, 26, 31, 36, 41, 46, 2]
    c.runs.mkdir(parents=True)
    for k in (1, 6, 11, 16, 21, 26, 31, 36, 41, 46, 2):
        c.archive(k).write_bytes(b"")
    assert shard.pick(["kafka-4.4"])[2] == 7
    assert shard.COMPARISONS["upgrades"].order() == list(range(1, 10))  # 9 slices mix seeds


def test_a_slice_is_committed_as_one_archive_and_unpacked_as_it_was_trimmed(tmp_path):
    work, runs = tmp_path / "work", tmp_path / "runs"
    run_dir(work, "a", "1-42")
    run_dir(work, "b", "2-42", verdict=False, forbidden={"lost-write": 3})
    shard.trim(work, runs / "shard-4")
    archive = shard.pack(runs / "shard-4")
    assert archive == runs / "shard-4.tar.xz"
    shutil.rmtree(runs / "shard-4")
    assert shard.unpack(runs) == [archive]
    kept = sorted(str(p.relative_to(runs)) for p in runs.rglob("*") if p.is_file())
    assert kept == ["shard-4.tar.xz", *(f"shard-4/{run}/{n}" for run in ("a/1-42", "b/2-42")
                                        for n in sorted(shard.KEPT))]
    assert RunResult.load(runs / "shard-4/b/2-42/results.json").forbidden == {"lost-write": 3}


def test_merge_writes_the_page_beside_the_unpacked_runs_and_links_them(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    c = shard.COMPARISONS["clients"]
    run_dir(tmp_path / "work", "a", "1-42")
    shard.trim(tmp_path / "work", c.runs / "shard-1")
    shard.pack(c.runs / "shard-1")
    shutil.rmtree(c.runs / "shard-1")
    assert shard.merge(c) == 0
    home = tmp_path / c.home
    assert sorted(p.name for p in home.iterdir()) == ["comparison.html", "comparison.md", "runs"]
    assert 'href="runs/shard-1/a/1-42/results.json"' in (home / "comparison.html").read_text()
