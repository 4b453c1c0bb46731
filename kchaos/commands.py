"""The commands that run, analyze, compare, replay and shrink, and manage images and containers:
each loads the engine (Docker, Spark, the clients) only when it is called."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

from rich.table import Table

from contracts.describe import shown
from contracts.errors import UsageError
from contracts.results import RunResult
from contracts.scenario import Scenario
from contracts.versions import DEFAULT_VERSION
from faults.plan import load as load_schedule
from harness import images, jars, labels, lazydisk, netdelay
from harness.engine import ensure_engine
from kchaos.catalog import contention, from_json, load, resolve_scenario, suite_files
from kchaos.console import Progress, out, say, say_result, show_available, show_plans, summary
from kchaos.exits import exit_code
from kchaos.matrix import column_elsewhere, merged, parse_shard, shard
from kchaos.overrides import kafka_target, override, target_problem, with_seeds
from kchaos.shrink import shrink
from reports import class_archive
from reports.history_text import TIMED, lines
from reports.render import step_summary, write_junit
from runloop.check import check, run_and_check


def run_many(scenarios: list[Scenario], root: Path, suite: str, ops=None,
             allow_unknown: bool = False) -> list[RunResult]:
    """Run scenarios one after another (one cluster at a time); write junit.xml (and the GitHub step
    summary when GITHUB_STEP_SUMMARY is set); print the summary. `ops` replays a recorded fault
    schedule instead of planning one from the seed."""
    ensure_engine(say=say)
    for s in scenarios:
        for warning in contention(s):
            say(f"warning: {s.name}: {warning}")
    results = []
    for i, s in enumerate(scenarios, 1):
        with Progress(f"{s.name} {s.kafka.version} seed {s.seed}", i, len(scenarios)) as progress:
            outcome = run_and_check(s, root, progress, ops, keep_going=True)
        say_result(outcome.result, str(outcome.run_dir / "report.html"))
        results.append(outcome.result)
    junit = write_junit(results, root / f"junit-{suite}.xml", suite, allow_unknown)
    if os.environ.get("GITHUB_STEP_SUMMARY"):
        with open(os.environ["GITHUB_STEP_SUMMARY"], "a") as f:
            f.write(step_summary(results, suite, Path.cwd()))
    out.print(summary(results))
    say(f"JUnit: {junit}")
    return results


def cmd_run(a) -> int:
    loaded = load(resolve_scenario(a.scenario))
    if a.kafka and kafka_target(a.kafka) and (problem := target_problem(loaded[0], a.kafka)):
        raise UsageError(f"--kafka {a.kafka}: {problem}")
    scenarios = override(loaded, a.kafka, a.seed, a.duration, a.client)
    if a.dry_run:
        return show_plans(scenarios)
    return exit_code(run_many(scenarios, a.runs_dir, scenarios[0].name,
                              allow_unknown=a.allow_unknown),
                     a.allow_unknown)


def for_version(files: list[Path], kafka: str | None) -> list[Scenario]:
    """The scenarios of these files that can run on `kafka` (VERSION[:MODE]; all, without one); the
    others are named."""
    scenarios = [s for f in files for s in load(f)]
    if kafka is None:
        return scenarios
    kafka_target(kafka)
    judged = [(s, target_problem(s, kafka)) for s in scenarios]
    for s, problem in judged:
        if problem:
            say(f"skipped on Kafka {kafka}: {s.name} ({problem})")
    return [s for s, problem in judged if not problem]


def cmd_suite(a) -> int:
    if a.kafka:
        kafka_target(a.kafka)  # before anything is said of the scenarios
    scenarios = with_seeds(for_version(suite_files(a.suite), a.kafka), seed_count(a.seeds), a.seed)
    scenarios = override(scenarios, a.kafka, None, a.duration, a.client)
    return exit_code(run_many(scenarios, a.runs_dir, a.suite, allow_unknown=a.allow_unknown),
                     a.allow_unknown)


def seed_count(seeds: int) -> int:
    """--seeds, which must run something."""
    if not 1 <= seeds <= 1000:
        raise UsageError(f"Expected --seeds between 1 and 1000 but got --seeds {seeds}")
    return seeds


def load_run(run_dir: Path) -> Scenario:
    """The scenario a run directory was run with."""
    if not run_dir.exists():
        raise UsageError(f"{run_dir} does not exist; name a run directory such as "
                         "runs/<scenario>/<stamp>-<seed>")
    if not (run_dir / "scenario.json").exists():
        raise UsageError(f"{run_dir} is not a run directory (no scenario.json)")
    return from_json((run_dir / "scenario.json").read_text())


def cmd_analyze(a) -> int:
    scenario = load_run(a.run_dir)
    history = a.run_dir / "history"
    if not any(history.glob("sends.*")):
        raise UsageError(f"{a.run_dir} has no history to analyze (no {history}/sends.parquet or "
                         "sends*.jsonl); name a run directory a run or the history builder wrote")
    r = check(scenario, a.run_dir, a.spark_master, say=lambda m: say(f"analyze: {m}")).result
    out.print(summary([r]))
    say(f"report: {a.run_dir / 'report.html'}")
    return exit_code([r], a.allow_unknown)


def cmd_history(a) -> int:
    load_run(a.run_dir)
    tables = [t.strip() for t in a.table.split(",")]
    if unknown := [t for t in tables if t not in TIMED]:
        raise UsageError(f"Expected tables among {', '.join(TIMED)} but got --table "
                         f"{shown(','.join(unknown))}")
    for line in lines(a.run_dir / "history", tables, a.around, a.window):
        out.print(line, markup=False, highlight=False, soft_wrap=True)
    return 0


def cmd_replay(a) -> int:
    scenario = load_run(a.run_dir)
    ops = load_schedule(a.run_dir / "schedule.json")
    return exit_code(run_many([scenario], a.runs_dir, f"replay-{scenario.name}", ops),
                     a.allow_unknown)


def cmd_shrink(a) -> int:
    scenario, ops = load_run(a.run_dir), load_schedule(a.run_dir / "schedule.json")
    if not (a.run_dir / "results.json").exists():
        raise UsageError(f"{a.run_dir} has no results.json; run `kchaos analyze {a.run_dir}` first")

    def run(s: Scenario, candidate: list) -> RunResult:
        return run_many([s], a.runs_dir, f"shrink-{scenario.name}", candidate,
                        allow_unknown=True)[0]

    kept, path = shrink(scenario, ops, RunResult.load(a.run_dir / "results.json"), a.tries, run,
                        a.runs_dir / f"shrink-{scenario.name}" / "minimal.yaml")
    say(f"smallest schedule that still violates: {len(kept)} of {len(ops)} ops "
        f"({', '.join(f'{o.fault} at {o.at:g} s' for o in kept)}): {path}")
    return 0


def cmd_compare(a) -> int:
    results = merged(a.merge) if a.merge else run_matrix(a)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    from reports.compare import write_compare  # scipy's second of imports, for this command only

    html, md = write_compare(results, a.runs_dir / f"compare-{stamp}")
    say(f"comparison: {html} and {md}")
    return exit_code(results, a.allow_unknown)


def run_matrix(a) -> list[RunResult]:
    """Run this machine's slice (all of it without --shard) of the versions × suite × seeds
    matrix."""
    versions = [v.strip() for v in (a.kafka or ("" if a.clients is None else DEFAULT_VERSION))
                .split(",") if v.strip()]
    if not versions:
        raise UsageError("Expected comma-separated Kafka versions like '4.3.1,3.9.2:zookeeper' but "
                         f"got --kafka {a.kafka!r} (or --merge DIR... to tabulate runs made "
                         "elsewhere)")
    which = parse_shard(a.shard)
    for v in versions:
        kafka_target(v)
    if a.spark_master:
        os.environ["KCHAOS_SPARK_MASTER"] = a.spark_master  # each run's analysis goes there
    files = suite_files(a.suite)
    clients = [c.strip() for c in (a.clients or "").split(",") if c.strip()] or [None]
    cells = [(v, s) for v in versions for c in clients
             for s in override(with_seeds(for_version(files, v), seed_count(a.seeds), a.seed), v,
                               None, a.duration, c)]
    moved = {(v, s.name): other for v, s in cells if (other := column_elsewhere(v, s, versions))}
    for (v, name), other in sorted(moved.items()):
        say(f"skipped on Kafka {v}: {name} (its own metadata mode makes it a run of the {other} "
            "column)")
    # dealt first: slices stay put
    mine = [(v, s) for v, s in shard(cells, which) if (v, s.name) not in moved]
    results: list[RunResult] = []
    for v in versions:
        if todo := [s for version, s in mine if version == v]:
            results += run_many(todo, a.runs_dir, f"compare-{v.replace('->', '-to-')}",
                                allow_unknown=a.allow_unknown)
    return results


def cmd_images(a) -> int:
    if a.action == "list" and a.available:
        return show_available(jars.available_versions(), jars.broker_artifact)
    ensure_engine(say=say)
    if a.action == "build":
        for v in a.kafka.split(","):
            jars.check_version(v.strip())
            say(f"{images.ensure_kafka_image(v.strip(), say=say)} ready")
        return 0
    table = Table(title="local kafka-chaos images")
    for col in ("image", "kafka", "JRE", "jars", "size"):
        table.add_column(col)
    for im in images.local_images():
        table.add_row(im.tag, im.version, im.jre, im.jars, f"{im.size / 1e6:.0f} MB")
    out.print(table)
    return 0


def cmd_clean(a) -> int:
    containers, networks = labels.clean(a.run)
    say(f"removed {containers} container(s) and {networks} network(s)")
    return 0


def cmd_setup(a) -> int:
    ensure_engine(say=say)
    for v in a.kafka.split(","):
        images.ensure_kafka_image(v.strip(), say=say)
    class_archive.ensure(say=say)
    lazydisk.binary(say=say)
    netdelay.binary(say=say)
    say("Docker engine, images, lazyfs, netdelay and the Spark class archive ready")
    return 0
