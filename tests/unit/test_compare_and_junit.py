"""The comparison table and JUnit output: a failing seed is never hidden behind a passing one."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
from PIL import Image

from contracts import signals
from contracts.errors import ClusterError, UsageError
from contracts.results import VERDICTS, Durations, Metrics, RunResult
from kchaos.catalog import validate
from kchaos.matrix import column_elsewhere, merged, parse_shard, shard
from reports.compare import write_compare
from reports.guarantees import rules
from reports.render import write_junit
from runloop import check as pipeline

RULES = rules(validate({"name": "r"}, "test"))


def result(scenario: str, kafka: str, verdict: str, seed: int = 1, lost: int = 0,
           missing=()) -> RunResult:
    return RunResult(scenario=scenario, kafka=kafka, verdict=VERDICTS[verdict], seed=seed,
                     run_dir=f"runs/{seed}", counts={"lost-write": lost, "duplicate": 0},
                     allowed=["duplicate"], missing_expect=list(missing),
                     metrics=Metrics(unavailable_s=1.5 * seed),
                     forbidden={"lost-write": lost} if lost else {}, rules=RULES,
                     examples={"lost-write": [{"value": "p0-7", "offset": 12}]} if lost else {},
                     unknown_because=["drain"] if verdict == "unknown" else [],
                     durations=Durations(run_s=10))


def test_compare_table_shows_the_worst_seed_and_sums_counts(tmp_path):
    results = [result("a", "4.3.1", "true", 1), result("a", "4.3.1", "false", 2, lost=3),
               result("a", "3.9.2", "true", 1), result("b", "3.9.2", "unknown", 1)]
    for r in results:
        r.run_dir = str(tmp_path / "runs" / str(r.seed))
    (tmp_path / "runs" / "2").mkdir(parents=True)
    (tmp_path / "runs" / "2" / "report.html").write_text("<html></html>")
    html, md = write_compare(results, tmp_path / "compare")
    text = md.read_text()
    assert "| scenario | Kafka 4.3.1 | Kafka 3.9.2 |" in text
    row_a = next(ln for ln in text.splitlines() if ln.startswith("| a |"))
    assert "FAIL×1, PASS×1" in row_a and "lost-write=3" in row_a and "unavailable ≤ 3.0 s" in row_a
    # b ran on 3.9.2 only
    assert "| scenario | Kafka 3.9.2 |\n|---|---|\n| b | UNKNOWN; no anomalies;" in text
    assert 'class="b-FAIL"' in html.read_text() and "seed 2" in html.read_text()
    # relative: the directory can move as a whole
    assert 'href="../runs/2/report.html"' in html.read_text()
    # its report not kept (or never written)
    assert 'href="../runs/1/results.json"' in html.read_text()
    # one or two seeds a version: no rank test can call a difference, and the summary says so
    # instead of "none"
    assert "Too few seeds for a rank test to tell versions apart in one scenario (4 runs;" in text
    assert "No single difference" not in text


def test_one_version_in_two_metadata_modes_gets_a_column_each_named_as_kafka_takes_it(tmp_path):
    zk = [result("a", "3.9.2", "true", seed)
          .model_copy(update={"settings": {"kafka": {"metadata": "zookeeper"}}})
          for seed in (1, 2)]
    kraft = result("a", "3.9.2",
                   "true").model_copy(update={"settings": {"kafka": {"metadata": "kraft"}}})
    old = result("a", "2.8.2",
                 "true").model_copy(update={"settings": {"kafka": {"metadata": "zookeeper"}}})
    for r in (*zk, kraft, old):
        r.run_dir = str(tmp_path / "runs" / str(r.seed))
    _, md = write_compare([*zk, kraft, old, result("a", "4.3.1", "true")], tmp_path / "compare")
    table = md.read_text()
    assert "| scenario | Kafka 4.3.1 | Kafka 3.9.2:zookeeper | Kafka 3.9.2 | Kafka 2.8.2 |" in table
    assert "| a | PASS; no anomalies; unavailable ≤ 1.5 s | PASS×2; no anomalies; " in table


def test_junit_fails_on_fail_unknown_or_not_provoked_unless_allowed_and_says_the_headline(tmp_path):
    path = write_junit([result("a", "4.3.1", "true"), result("b", "4.3.1", "false", lost=1),
                        result("c", "4.3.1", "true", missing=["lost-write"]),
                        result("d", "4.3.1", "unknown")],
                       tmp_path / "j.xml", "smoke")
    root = ET.parse(path).getroot()
    # unknown fails
    assert (root.get("tests"), root.get("failures"), root.get("skipped")) == ("4", "3", "0")
    failed = {c.get("name"): c.find("failure") for c in root if c.find("failure") is not None}
    assert failed["b[4.3.1, seed 1]"].get("message") == "1 acknowledged write lost; forbidden."
    body = failed["b[4.3.1, seed 1]"].text.splitlines()
    assert body[0] == "FAIL: Kafka broke a guarantee that the settings and the version promise"
    assert body[1].startswith("lost-write is forbidden here: acks=all with min.insync.replicas>=2")
    assert body[2:] == ["lost-write: 1 (forbidden)", "  value=p0-7, offset=12",
                        "report: runs/1/results.json"]
    not_provoked = failed["c[4.3.1, seed 1]"].get("message")
    assert not_provoked.startswith("Not provoked: expected lost-write but saw none")
    assert failed["d[4.3.1, seed 1]"].get("message") == "Unknown: drain."
    assert failed["d[4.3.1, seed 1]"].text.splitlines()[-2:] == [
        "unknown because drain", "report: runs/1/results.json"]
    # no dots a CI splits into packages
    assert {c.get("classname") for c in root} == {"kchaos.smoke"}
    relaxed = ET.parse(write_junit([result("d", "4.3.1", "unknown"),
                                    result("c", "4.3.1", "true", missing=["x"])],
                                   tmp_path / "k.xml", "s", True)).getroot()
    assert (relaxed.get("failures"), relaxed.get("skipped")) == ("0", "2")


def test_junit_passes_an_expected_anomaly_and_a_known_bug_with_the_headline_in_system_out(tmp_path):
    allowed = result("a", "4.3.1", "true").model_copy(update={"counts": {"duplicate": 2},
                                                              "allowed_seen": {"duplicate": 2}})
    bug = result("k[version=2.0.0]", "2.0.0", "false", lost=4).model_copy(update={
        "known_bug": "KAFKA-7128", "settings": {"regression": {
            "fixed": "2.0.1", "link": "https://x"}}})
    root = ET.parse(write_junit([allowed, bug], tmp_path / "j.xml", "regressions")).getroot()
    assert (root.get("failures"), root.get("skipped"), root.get("errors")) == ("0", "0", "0")
    out = {c.get("name"): c.find("system-out").text for c in root}
    assert set(out) == {"a[4.3.1, seed 1]", "k[2.0.0, seed 1]"}  # the version said once
    assert out["a[4.3.1, seed 1]"].startswith("2 values written twice; allowed.\nEXPECTED "
                                              "ANOMALY: ")
    assert out["k[2.0.0, seed 1]"].startswith("4 acknowledged writes lost: KAFKA-7128 found again "
                                              "(Kafka 2.0.0 has it, 2.0.1 fixed it).")
    known = "\nKNOWN BUG: a known Kafka bug was found again on the release that has it\n"
    assert known in out["k[2.0.0, seed 1]"]


def test_cases_of_several_seeds_and_versions_have_distinct_names(tmp_path):
    runs = [result("a", v, "true", seed) for v in ("4.3.1", "3.9.2") for seed in (1, 2)]
    root = ET.parse(write_junit(runs, tmp_path / "j.xml", "nightly")).getroot()
    assert len({c.get("name") for c in root}) == 4


def test_a_run_the_harness_could_not_complete_is_an_error_and_the_suite_goes_on(
        tmp_path, monkeypatch):
    def broker_never_up(run):
        run.run_dir.mkdir(parents=True)
        raise ClusterError("kafka-2 did not start within 90s")

    monkeypatch.setattr(pipeline, "warm_spark", lambda master: None)
    monkeypatch.setattr(pipeline.ChaosRun, "execute", broker_never_up)
    scenario = validate({"name": "e", "kafka": {"version": "3.9.2"}}, "test")
    with pytest.raises(ClusterError):
        pipeline.run_and_check(scenario, tmp_path / "raised")
    out = pipeline.run_and_check(scenario, tmp_path / "runs", keep_going=True)
    r = out.result
    assert (r.verdict, r.badge) == (None, "UNKNOWN")
    assert r.error == "ClusterError: kafka-2 did not start within 90s"
    assert json.loads((out.run_dir / "results.json").read_text())["status"] == "error"

    root = ET.parse(write_junit([r, result("a", "3.9.2", "true")], tmp_path / "j.xml",
                                "s")).getroot()
    assert (root.get("tests"), root.get("errors"), root.get("failures")) == ("2", "1", "0")
    assert root.find("testcase/error").get("message") == r.error
    html, md = write_compare([r], tmp_path / "compare")
    assert "| e | UNKNOWN; harness error in 1/1; no anomalies |" in md.read_text()
    assert f'href="../runs/e/{out.run_dir.name}/results.json"' in html.read_text()


def test_an_error_raised_while_a_signal_ends_the_run_ends_the_suite_too(tmp_path, monkeypatch):
    # SIGTERM raised SystemExit; the run's cleanup then failed (its directory was gone), and that
    # error replaced it
    def cleanup_failed_after_sigterm(run):
        signals.SIGNALLED.append(signal.SIGTERM)
        raise FileNotFoundError(f"{run.run_dir}/.run.json.tmp")

    monkeypatch.setattr(signals, "SIGNALLED", [])
    monkeypatch.setattr(pipeline, "warm_spark", lambda master: None)
    monkeypatch.setattr(pipeline.ChaosRun, "execute", cleanup_failed_after_sigterm)
    scenario = validate({"name": "e", "kafka": {"version": "3.9.2"}}, "test")
    with pytest.raises(FileNotFoundError):
        pipeline.run_and_check(scenario, tmp_path / "runs", keep_going=True)
    # no result saying the harness failed: the command was stopped
    assert not (tmp_path / "runs").exists()


def test_a_report_is_never_replaced_by_one_judged_on_less_history(tmp_path):
    full = result("a", "4.3.1", "false", lost=3)
    full.metrics = Metrics(acked=900, failed=50, indeterminate=10, reads=940)
    full.save(tmp_path)
    fewer = result("a", "4.3.1", "true")
    fewer.metrics = Metrics(acked=100, reads=100)
    with pytest.raises(pipeline.UsageError, match="holds 200 sends and reads, its report was "
                                                  "judged on 1,900"):
        pipeline._refuse_emptier(fewer, pipeline._earlier(tmp_path), tmp_path)
    assert RunResult.load(tmp_path / "results.json").verdict is False
    # as much history, judged again: allowed
    fewer.metrics = Metrics(acked=950, failed=10, reads=940)
    pipeline._refuse_emptier(fewer, pipeline._earlier(tmp_path), tmp_path)


def placed(results: list[RunResult], tmp_path) -> tuple[Path, Path]:
    """The comparison's HTML and Markdown for `results`, each run placed under tmp_path/runs."""
    for r in results:
        r.run_dir = str(tmp_path / "runs" / r.scenario / r.kafka / str(r.seed))
    return write_compare(results, tmp_path / "compare")


def compared(results: list[RunResult], tmp_path) -> str:
    """The comparison's Markdown text for `results`."""
    return placed(results, tmp_path)[1].read_text()


def higher_in_8_of_9() -> list[RunResult]:
    """3 seeds a version: 4.3.1 loses 10 more writes in 8 scenarios and 10 fewer in a ninth."""
    results = [result(f"s{i}", v, "true", s, lost=s + (10 if v == "4.3.1" else 0)) for i in range(8)
               for v in ("4.3.1", "3.9.2") for s in range(3)]
    return results + [result("z", v, "true", s, lost=s + (0 if v == "4.3.1" else 10))
                      for v in ("4.3.1", "3.9.2")
                      for s in range(3)]


def test_compare_marks_a_difference_its_seeds_cannot_explain_and_not_one_they_can(tmp_path):
    # 5 seeds each: version 4.3.1 loses 600-700 acknowledged writes, 3.9.2 30,000-32,000: p = 2/252
    # (exact)
    results = [result("a", "4.3.1", "true", s, lost=600 + 20 * s) for s in range(5)]
    results += [result("a", "3.9.2", "true", s, lost=30_000 + 500 * s) for s in range(5)]
    # overlapping figures: no difference
    results += [result("b", v, "true", s, lost=s) for v in ("4.3.1", "3.9.2") for s in range(5)]
    html, md = placed(results, tmp_path)
    text = md.read_text()
    assert "Too few seeds" not in text
    said = [ln for ln in text.splitlines() if ln.startswith("- ")]
    # four tests (each scenario's losses and unavailability): q = 4 * p / 1
    assert said == ["- a: acknowledged writes lost median 31,000 on Kafka 3.9.2 vs 640 on 4.3.1 "
                    "(Mann-Whitney U p=0.00794, q=0.0317)"]
    assert "Also p < 0.05" not in text
    row_a = next(ln for ln in text.splitlines() if ln.startswith("| a |"))
    assert "acknowledged writes lost 640 (600-680)" in row_a
    page = html.read_text()
    assert "p=0.00794" in page and '<img src="box-00.png"' in page
    # 32 colours, the medians' orange among them
    with Image.open(tmp_path / "compare" / "box-00.png") as png:
        colours = [c for _, c in png.convert("RGB").getcolors()]
    assert png.mode == "P" and len(colours) <= 32
    assert any(abs(r - 255) + abs(g - 127) + abs(b - 14) < 40 for r, g, b in colours)


def test_among_many_tests_a_difference_seeds_show_is_only_suggestive(tmp_path):
    # the difference above, beside 20 scenarios whose versions do not differ: 42 tests, q = 42 * p =
    # 0.333
    results = [result("a", "4.3.1", "true", s, lost=600 + 20 * s) for s in range(5)]
    results += [result("a", "3.9.2", "true", s, lost=30_000 + 500 * s) for s in range(5)]
    results += [result(f"n{i}", v, "true", s, lost=s) for i in range(20) for v in ("4.3.1", "3.9.2")
                for s in range(5)]
    text = compared(results, tmp_path)
    assert ("No single difference between versions is beyond doubt" in text
            and "42 Mann-Whitney U tests" in text)
    assert ("Also p < 0.05, but not beyond chance among so many tests: 1 difference, where chance "
            "alone gives about 2 of 42 tests") in text
    assert [ln for ln in text.splitlines() if ln.startswith("- ")] == [
        "- a: acknowledged writes lost median 31,000 on Kafka 3.9.2 vs 640 on 4.3.1 (Mann-Whitney "
        "U p=0.00794, q=0.333)"]


SIGN_TEST = ("- acknowledged writes lost: higher on Kafka 4.3.1 than on 3.9.2 in 8 of 9 scenarios "
             "whose medians differ (sign test p=0.0391, q=0.0391)")


def test_a_version_higher_in_most_scenarios_is_a_tendency_no_scenario_alone_shows(tmp_path):
    # 8 scenarios, 3 seeds a version: 4.3.1 loses 10 more writes in each, too few seeds for any one
    # scenario's rank test (p >= 0.1), but not for a sign test over the scenarios; one scenario the
    # other way: 8 of 9, p = 20 / 2**9
    text = compared(higher_in_8_of_9(), tmp_path)
    assert "Too few seeds for a rank test to tell versions apart in one scenario" in text
    assert SIGN_TEST in text


def test_tests_that_could_never_reach_significance_do_not_dilute_the_ones_that_can(tmp_path):
    # as above (8 of 9 scenarios, q = p = 0.0391), beside a regression run on two other versions (a
    # sign test over two scenarios: p >= 0.5) and a cell of 2 seeds against 5 (a rank test's least
    # p: 2 / C(7, 2) = 0.095)
    results = higher_in_8_of_9()
    results += [result("r", v, "false" if v == "2.0.0" else "true", s,
                       lost=900 if v == "2.0.0" else 0)
                for v in ("2.0.0", "2.0.1") for s in range(5)]
    results += [result("a", "2.0.0", "true", s, lost=600 + 20 * s) for s in range(5)]
    results += [result("a", "2.0.1", "true", s, lost=30_000 + 500 * s) for s in range(2)]
    text = compared(results, tmp_path)
    assert SIGN_TEST in text and "where 6 or more medians differ" in text
    # r's, 5 seeds against 5; none of a's 5 against 2
    assert "(2 Mann-Whitney U tests over 71 runs" in text
    assert ("- r: acknowledged writes lost median 900 on Kafka 2.0.0 vs 0 on 2.0.1 (Mann-Whitney U "
            "p=0.00398, q=0.00795)") in text


def test_shards_deal_every_cell_to_exactly_one_machine_and_merge_tabulates_them(tmp_path):
    base = validate({"name": "s", "duration": "30s"}, "s")
    cells = [(v, base.model_copy(update={"seed": seed})) for v in ("4.3.1", "3.9.2")
             for seed in range(5)]
    slices = [shard(cells, (i, 3)) for i in (1, 2, 3)]
    dealt = sorted((v, s.seed) for part in slices for v, s in part)
    assert dealt == sorted((v, s.seed) for v,
                           s in cells) and max(map(len, slices)) - min(map(len, slices)) <= 1
    # the order given does not matter
    assert slices == [shard(list(reversed(cells)), (i, 3)) for i in (1, 2, 3)]
    for i, r in enumerate([result("a", "4.3.1", "true", 1),
                           result("a", "3.9.2", "false", 2, lost=4)]):
        run = tmp_path / f"shard{i}" / "a" / str(r.seed)
        run.mkdir(parents=True)
        r.save(run)
    runs = merged([tmp_path / "shard0", tmp_path / "shard1"])
    assert sorted(r.kafka for r in runs) == ["3.9.2", "4.3.1"]
    assert sorted(r.run_dir for r in runs) == [str(tmp_path / f"shard{i}" / "a" / str(i + 1))
                                               for i in (0, 1)]
    with pytest.raises(UsageError, match="--shard I/N"):
        parse_shard("4/3")


def test_a_scenario_whose_own_mode_is_another_asked_column_runs_there_only():
    zk = validate({"name": "zk", "duration": "30s",
                   "kafka": {"version": "3.9.2", "metadata": "zookeeper"}}, "zk")
    kraft = validate({"name": "k", "duration": "30s", "kafka": {"version": "3.9.2"}}, "k")
    both = ["4.3.1", "3.9.2", "3.9.2:zookeeper"]
    assert column_elsewhere("3.9.2", zk, both) == "3.9.2:zookeeper"
    assert column_elsewhere("3.9.2:zookeeper", zk, both) is None
    # no such column: it stays where it was asked
    assert column_elsewhere("3.9.2", zk, ["4.3.1", "3.9.2"]) is None
    assert column_elsewhere("3.9.2", kraft, both) is None
    assert column_elsewhere("3.9.2:kraft", kraft, ["3.9.2:kraft", "3.9.2:zookeeper"]) is None


def test_runs_whose_chaos_did_not_happen_as_planned_give_no_figures_and_no_difference(tmp_path):
    from contracts.results import Facts

    # 4.3.1's faults failed in every seed (an op waiting out its timeout: long "unavailability", no
    # loss)
    failed_op = Facts(drain_ran=True, drain_complete=True, partitions_not_drained=[],
                      replicas_dumped=True,
                      recovered=True, assign_readers=[],
                      chaos_problems=["kill planned at 10.0 s on brokers [] failed: ClusterError: "
                                      "Timed out"])
    results = [result("a", "4.3.1", "unknown", s, lost=0).model_copy(
        update={"metrics": Metrics(unavailable_s=60.0 + s), "facts": failed_op}) for s in range(5)]
    results += [result("a", "3.9.2", "true", s, lost=30_000 + 500 * s) for s in range(5)]
    for r in results:
        r.run_dir = str(tmp_path / "runs" / r.kafka / str(r.seed))
    _, md = write_compare(results, tmp_path / "compare")
    text = md.read_text()
    row_a = next(ln for ln in text.splitlines() if ln.startswith("| a |"))
    failed_cell = row_a.split(" | ")[1]
    assert "chaos not as planned in 5/5 (no figures from those)" in failed_cell
    assert "unavailable" not in failed_cell and "acknowledged writes lost" not in failed_cell
    assert "0 Mann-Whitney U tests" in text and "on Kafka 4.3.1" not in text


def test_results_of_older_runs_that_named_undrained_partitions_by_number_still_load(tmp_path):
    from contracts.results import Facts

    r = result("a", "4.3.1", "unknown").model_copy(update={"facts": Facts(
        drain_ran=True, drain_complete=False, partitions_not_drained=["chaos-0"],
        replicas_dumped=True, recovered=True, assign_readers=[])})
    path = r.save(tmp_path)
    path.write_text(path.read_text().replace('"chaos-0"', "0"))
    assert RunResult.load(path).facts.partitions_not_drained == ["0"]


def test_a_regressions_affected_and_fixed_versions_share_a_row(tmp_path):
    runs = [result("k[version=2.0.0]", "2.0.0", "false", lost=4),
            result("k[version=2.0.1]", "2.0.1", "true"),
            result("u[version=3.9.2,unclean_leader_election=true]", "3.9.2", "true")]
    _, md = write_compare(runs, tmp_path / "compare")
    lines = md.read_text().splitlines()
    rows = [ln for ln in lines if ln.startswith("| k |") or ln.startswith("| u")]
    assert rows[0].startswith("| k | PASS;") and "| FAIL; lost-write=4;" in rows[0]  # 2.0.1, 2.0.0
    assert (rows[1].startswith("| u[unclean_leader_election=true] | PASS;")
            and "not run" not in md.read_text())
    # a table per set of versions a scenario ran on: a column only for what ran
    assert [ln for ln in lines
            if ln.startswith("| scenario")] == ["| scenario | Kafka 2.0.1 | Kafka 2.0.0 |",
                                                                   "| scenario | Kafka 3.9.2 |"]
