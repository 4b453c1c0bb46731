"""`kchaos`: run scenarios and suites, analyze, compare versions, replay, build images, clean up."""

from __future__ import annotations

import argparse
import os
from datetime import UTC, datetime
from pathlib import Path

from rich.table import Table
from rich.text import Text

from contracts import provenance
from contracts.errors import UNKNOWN_EXIT, ChaosError, ClusterError, UsageError
from contracts.results import RunResult, expectation
from contracts.scenario import Scenario
from contracts.versions import DEFAULT_VERSION, SUPPORTED_VERSIONS
from faults.schedule import load as load_schedule
from faults.schedule import plan
from harness import images, labels, lazydisk, netdelay
from harness.engine import ensure_engine
from kchaos import exits
from kchaos.catalog import (
    catalog,
    from_json,
    kafka_target,
    load,
    override,
    resolve_scenario,
    suite_files,
    with_seeds,
)
from kchaos.console import Progress, console, error_line, out, say_result, show_available, summary
from kchaos.matrix import column_elsewhere, merged, parse_shard, shard
from kchaos.pipeline import check, run_and_check
from kchaos.shrink import shrink
from reports import class_archive
from reports.render import step_summary, write_junit
from workloads.client_process import bound_malloc_arenas


def say(message: str) -> None:
    """A line of set-up progress on stderr."""
    console.print(message, markup=False, highlight=False)


def run_many(scenarios: list[Scenario], root: Path, suite: str, ops=None,
             allow_unknown: bool = False) -> list[RunResult]:
    """Run scenarios one after another (one cluster at a time); write junit.xml (and the GitHub step summary when
    GITHUB_STEP_SUMMARY is set); print the summary. `ops` replays a recorded fault schedule instead of planning one
    from the seed."""
    ensure_engine(say=say)
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
    if a.kafka and (problem := loaded[0].version_problem(*kafka_target(a.kafka))):
        raise UsageError(f"--kafka {a.kafka}: {problem}")
    scenarios = override(loaded, a.kafka, a.seed, a.duration)
    if a.dry_run:
        return show_plans(scenarios)
    return exit_code(run_many(scenarios, a.runs_dir, scenarios[0].name, allow_unknown=a.allow_unknown),
                     a.allow_unknown)


def for_version(files: list[Path], kafka: str | None) -> list[Scenario]:
    """The scenarios of these files that can run on `kafka` (VERSION[:MODE]; all, without one); the others are
    named."""
    scenarios = [s for f in files for s in load(f)]
    version, metadata = kafka_target(kafka) if kafka else (None, None)
    kept = [s for s in scenarios if version is None or s.runs_on(version, metadata)]
    for s in scenarios:
        if s not in kept:
            say(f"skipped on Kafka {kafka}: {s.name} ({s.version_problem(version, metadata)})")
    return kept


def cmd_suite(a) -> int:
    if a.kafka:
        kafka_target(a.kafka)  # before anything is said of the scenarios
    scenarios = with_seeds(for_version(suite_files(a.suite), a.kafka), seed_count(a.seeds), a.seed)
    scenarios = override(scenarios, a.kafka, None, a.duration)
    return exit_code(run_many(scenarios, a.runs_dir, a.suite, allow_unknown=a.allow_unknown), a.allow_unknown)


def cmd_validate(a) -> int:
    return show_plans([s for f in a.files for s in load(resolve_scenario(f))])


def show_plans(scenarios: list[Scenario]) -> int:
    """Print each resolved scenario and the fault schedule its seed plans; start nothing."""
    for s in scenarios:
        out.print(Text(f"{s.name}: valid, Kafka {s.kafka.version} ({s.kafka.mode}), seed {s.seed}, "
                       f"{s.duration:g} s"))
        out.print_json(s.model_dump_json(by_alias=True))
        for op in plan(s.faults, s.duration, s.seed):
            f = s.faults[op.index]
            out.print(Text(f"  at {op.at:7.2f} s  {op.fault} {f.target} for {op.hold:g} s  (faults.{op.index})"))
    return 0


def seed_count(seeds: int) -> int:
    """--seeds, which must run something."""
    if not 1 <= seeds <= 1000:
        raise UsageError(f"Expected --seeds between 1 and 1000 but got --seeds {seeds}")
    return seeds


def exit_code(results: list[RunResult], allow_unknown: bool = False) -> int:
    """4 when the harness could not complete a run, 1 on a FAIL, 5 on UNKNOWN or NOT PROVOKED (0 with
    --allow-unknown), else 0: PASS, EXPECTED ANOMALY and KNOWN BUG are green."""
    if any(r.error for r in results):
        return ClusterError.exit_code
    if any(r.failed for r in results):
        return 1
    return UNKNOWN_EXIT if any(not r.badge.green for r in results) and not allow_unknown else 0


def load_run(run_dir: Path) -> Scenario:
    """The scenario a run directory was run with."""
    if not run_dir.exists():
        raise UsageError(f"{run_dir} does not exist; name a run directory such as runs/<scenario>/<stamp>-<seed>")
    if not (run_dir / "scenario.json").exists():
        raise UsageError(f"{run_dir} is not a run directory (no scenario.json)")
    return from_json((run_dir / "scenario.json").read_text())


def cmd_analyze(a) -> int:
    scenario = load_run(a.run_dir)
    history = a.run_dir / "history"
    if not any(history.glob("sends.*")):
        raise UsageError(f"{a.run_dir} has no history to analyze (no {history}/sends.parquet or sends*.jsonl); "
                         "name a run directory a run or the history builder wrote")
    r = check(scenario, a.run_dir, a.spark_master).result
    out.print(summary([r]))
    say(f"report: {a.run_dir / 'report.html'}")
    return exit_code([r], a.allow_unknown)


def cmd_replay(a) -> int:
    scenario = load_run(a.run_dir)
    ops = load_schedule(a.run_dir / "schedule.json")
    return exit_code(run_many([scenario], a.runs_dir, f"replay-{scenario.name}", ops), a.allow_unknown)


def cmd_shrink(a) -> int:
    scenario, ops = load_run(a.run_dir), load_schedule(a.run_dir / "schedule.json")
    if not (a.run_dir / "results.json").exists():
        raise UsageError(f"{a.run_dir} has no results.json; run `kchaos analyze {a.run_dir}` first")

    def run(s: Scenario, candidate: list) -> RunResult:
        return run_many([s], a.runs_dir, f"shrink-{scenario.name}", candidate, allow_unknown=True)[0]

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
    """Run this machine's slice (all of it without --shard) of the versions × suite × seeds matrix."""
    versions = [v.strip() for v in (a.kafka or "").split(",") if v.strip()]
    if not versions:
        raise UsageError(f"Expected comma-separated Kafka versions like '4.3.1,3.9.2:zookeeper' but got --kafka "
                         f"{a.kafka!r} (or --merge DIR... to tabulate runs made elsewhere)")
    which = parse_shard(a.shard)
    for v in versions:
        kafka_target(v)
    if a.spark_master:
        os.environ["KCHAOS_SPARK_MASTER"] = a.spark_master  # each run's analysis goes there
    files = suite_files(a.suite)
    cells = [(v, s) for v in versions
             for s in override(with_seeds(for_version(files, v), seed_count(a.seeds), a.seed), v, None, a.duration)]
    moved = {(v, s.name): other for v, s in cells if (other := column_elsewhere(v, s, versions))}
    for (v, name), other in sorted(moved.items()):
        say(f"skipped on Kafka {v}: {name} (its own metadata mode makes it a run of the {other} column)")
    mine = [(v, s) for v, s in shard(cells, which) if (v, s.name) not in moved]  # dealt first: slices stay put
    results: list[RunResult] = []
    for v in versions:
        if todo := [s for version, s in mine if version == v]:
            results += run_many(todo, a.runs_dir, f"compare-{v}", allow_unknown=a.allow_unknown)
    return results


def cmd_images(a) -> int:
    if a.action == "list" and a.available:
        return show_available(images.available_versions(), images.broker_artifact)
    ensure_engine(say=say)
    if a.action == "build":
        for v in a.kafka.split(","):
            images.check_version(v.strip())
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


def cmd_scenarios(a) -> int:
    table = Table(title="built-in scenarios")
    for col in ("name", "kafka", "guarantee checked", "expected badge"):
        table.add_column(col)
    for path in catalog().values():
        for s in load(path):
            table.add_row(Text(s.name), f"{s.kafka.version} {s.kafka.mode}", Text(s.guarantee or s.description),
                          Text(expectation(s)))
    out.print(table)
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


RUNS_DIR = {"type": Path, "default": Path("runs"), "help": "where run directories go (default: runs/)"}


def allow_unknown(p: argparse.ArgumentParser) -> None:
    """--allow-unknown, for every command that ends in verdicts."""
    p.add_argument("--allow-unknown", action="store_true",
                   help=f"exit 0, not {UNKNOWN_EXIT}, on UNKNOWN or NOT PROVOKED runs (when none failed)")


def suite_options(p: argparse.ArgumentParser) -> None:
    """--seed, --seeds, --duration, --runs-dir and --allow-unknown, shared by `suite` and `compare`."""
    p.add_argument("--seed", type=int, help="the first seed of every scenario (default: each scenario's own)")
    p.add_argument("--seeds", type=int, default=1, help="runs per scenario with consecutive seeds")
    p.add_argument("--duration")
    p.add_argument("--runs-dir", **RUNS_DIR)
    allow_unknown(p)


class Parser(argparse.ArgumentParser):
    """No abbreviated options: `--seed 42` must never be taken for `--seeds 42` (42 runs of every scenario)."""

    def __init__(self, **kwargs) -> None:
        super().__init__(allow_abbrev=False, **kwargs)


def parser() -> argparse.ArgumentParser:
    p = Parser(prog="kchaos", description="Jepsen-style chaos testing for real Apache Kafka")
    p.add_argument("--version", action="version", version=f"kchaos {provenance.version()} ({provenance.commit()})")
    sub = p.add_subparsers(dest="cmd", required=True)  # subcommands' parsers are Parsers too

    r = sub.add_parser("run", help="run one scenario (a YAML file or a built-in name)")
    r.add_argument("scenario")
    r.add_argument("--kafka")
    r.add_argument("--seed", type=int)
    r.add_argument("--duration")
    r.add_argument("--runs-dir", **RUNS_DIR)
    r.add_argument("--dry-run", action="store_true", help="print the resolved scenario and its schedule only")
    allow_unknown(r)
    r.set_defaults(fn=cmd_run)

    v = sub.add_parser("validate", help="check scenario files and print each one's schedule; start nothing")
    v.add_argument("files", nargs="+")
    v.set_defaults(fn=cmd_validate)

    s = sub.add_parser("suite", help="run a suite of built-in scenarios (smoke, nightly)")
    s.add_argument("suite")
    s.add_argument("--kafka")
    suite_options(s)
    s.set_defaults(fn=cmd_suite)

    an = sub.add_parser("analyze", help="re-check a run directory (works on a run killed half-way)")
    an.add_argument("run_dir", type=Path)
    an.add_argument("--spark-master", help="e.g. spark://127.0.0.1:7077 (default local[*])")
    allow_unknown(an)
    an.set_defaults(fn=cmd_analyze)

    c = sub.add_parser("compare", help="run a suite on several Kafka versions and tabulate")
    c.add_argument("--kafka", help="comma-separated versions")
    c.add_argument("--suite", default="smoke")
    c.add_argument("--shard", help="I/N: run only slice I of N of the version x scenario x seed matrix")
    c.add_argument("--merge", nargs="+", type=Path, metavar="DIR", help="tabulate the runs under these directories")
    c.add_argument("--spark-master", help="analyze each run on this Spark master (e.g. spark://host:7077)")
    suite_options(c)
    c.set_defaults(fn=cmd_compare)

    replaying(sub)
    housekeeping(sub)
    return p


def replaying(sub) -> None:
    """The commands that start again from a run directory: shrink and replay."""
    sh = sub.add_parser("shrink", help="the smallest part of a violating run's fault schedule that still violates")
    sh.add_argument("run_dir", type=Path)
    sh.add_argument("--tries", type=int, default=2, help="seeds each candidate schedule is run on")
    sh.add_argument("--runs-dir", **RUNS_DIR)
    sh.set_defaults(fn=cmd_shrink)

    rp = sub.add_parser("replay", help="repeat a run's exact fault schedule")
    rp.add_argument("run_dir", type=Path)
    rp.add_argument("--runs-dir", **RUNS_DIR)
    allow_unknown(rp)
    rp.set_defaults(fn=cmd_replay)


def housekeeping(sub) -> None:
    """Images, clean-up, the catalog and set-up."""
    im = sub.add_parser("images", help="build or list Kafka images")
    im.add_argument("action", choices=["build", "list"])
    im.add_argument("--kafka", default=DEFAULT_VERSION)
    im.add_argument("--available", action="store_true", help="with list: the releases Maven Central offers")
    im.set_defaults(fn=cmd_images)

    cl = sub.add_parser("clean", help="remove containers and networks a crashed run left")
    cl.add_argument("--run", help="only this run id")
    cl.set_defaults(fn=cmd_clean)

    sc = sub.add_parser("scenarios", help="list the built-in scenarios")
    sc.add_argument("action", choices=["list"])
    sc.set_defaults(fn=cmd_scenarios)

    st = sub.add_parser("setup", help="make sure a Docker engine runs and the images exist")
    st.add_argument("--kafka", default=",".join(SUPPORTED_VERSIONS))
    st.set_defaults(fn=cmd_setup)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    with exits.signals_handled():
        return _dispatch(args)


def _dispatch(args: argparse.Namespace) -> int:
    """Run the command; a signal's echoes (errors of the JVM and clients it also ended) end it as interrupted."""
    try:
        return args.fn(args)
    except KeyboardInterrupt:
        return exits.interrupted()
    except (Exception, SystemExit) as exc:  # a signal to the group also ends the Spark JVM and clients
        if exits.SIGNALLED:
            return exits.interrupted()
        if isinstance(exc, ChaosError):
            error_line(str(exc))
            return exc.exit_code
        raise


def entry() -> None:
    """The `kchaos` command; its threads (samplers, nemesis, Spark's gateway) share two malloc arenas, as a client's
    do."""
    bound_malloc_arenas()
    exits.leave(main())


if __name__ == "__main__":
    entry()
