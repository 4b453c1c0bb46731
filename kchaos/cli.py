"""`kchaos`: run scenarios and suites, analyze, compare versions, replay, build images, clean up."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path

from rich.table import Table

from contracts.errors import ChaosError, ClusterError, UsageError
from contracts.scenario import Scenario
from contracts.versions import DEFAULT_VERSION, SUPPORTED_VERSIONS, has_zookeeper
from faults.schedule import load as load_schedule
from harness import images, labels
from harness.engine import ensure_engine
from kchaos.catalog import catalog, from_json, load, override, resolve_scenario, suite_files, with_seeds
from kchaos.console import Progress, console, out, summary
from kchaos.pipeline import check, run_and_check
from reports import class_archive
from reports.compare import write_compare
from reports.render import write_junit
from reports.result import RunResult


def say(message: str) -> None:
    """A line of set-up progress on stderr."""
    console.print(message)


def run_many(scenarios: list[Scenario], root: Path, suite: str, ops=None) -> list[RunResult]:
    """Run scenarios one after another (one cluster at a time); write junit.xml; print the summary.
    `ops` replays a recorded fault schedule instead of planning one from the seed."""
    ensure_engine(say=say)
    results = []
    for s in scenarios:
        with Progress(s.name) as progress:
            outcome = run_and_check(s, root, progress, ops, keep_going=True)
        r = outcome.result
        if r.error:
            console.print(f"[red]{s.name}: harness error, going on with the next run: {r.error}[/red]")
        else:
            console.print(f"{s.name}: valid={r.verdict} → {outcome.run_dir / 'report.html'}")
        results.append(r)
    junit = write_junit(results, root / f"junit-{suite}.xml", suite)
    out.print(summary(results))
    console.print(f"JUnit: {junit}")
    return results


def cmd_run(a) -> int:
    scenarios = override(load(resolve_scenario(a.scenario)), a.kafka, a.seed, a.duration)
    return exit_code(run_many(scenarios, a.runs_dir, scenarios[0].name))


def cmd_suite(a) -> int:
    scenarios = with_seeds([s for f in suite_files(a.suite) for s in load(f)], a.seeds, a.seed)
    scenarios = override(scenarios, a.kafka, None, a.duration)
    return exit_code(run_many(scenarios, a.runs_dir, a.suite))


def exit_code(results: list[RunResult]) -> int:
    """4 when the harness could not complete a run, 1 when a verdict failed, else 0."""
    if any(r.error for r in results):
        return ClusterError.exit_code
    return 1 if any(r.failed for r in results) else 0


def load_run(run_dir: Path) -> Scenario:
    """The scenario a run directory was run with."""
    if not (run_dir / "scenario.json").exists():
        raise UsageError(f"{run_dir} is not a run directory (no scenario.json)")
    return from_json((run_dir / "scenario.json").read_text())


def cmd_analyze(a) -> int:
    r = check(load_run(a.run_dir), a.run_dir, a.spark_master).result
    out.print(summary([r]))
    console.print(f"report: {a.run_dir / 'report.html'}")
    return exit_code([r])


def cmd_replay(a) -> int:
    scenario = load_run(a.run_dir)
    ops = load_schedule(a.run_dir / "schedule.json")
    return exit_code(run_many([scenario], a.runs_dir, f"replay-{scenario.name}", ops))


def cmd_compare(a) -> int:
    versions = [v.strip() for v in a.kafka.split(",") if v.strip()]
    for v in versions:
        images.check_version(v)
    files = suite_files(a.suite)
    results = []
    for v in versions:
        scenarios = [s for f in files for s in load(f) if s.kafka.metadata != "zookeeper" or has_zookeeper(v)]
        results += run_many(override(with_seeds(scenarios, a.seeds, a.seed), v, None, a.duration), a.runs_dir,
                            f"compare-{v}")
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    html, md = write_compare(results, a.runs_dir / f"compare-{stamp}")
    console.print(f"comparison: {html} and {md}")
    return exit_code(results)


def cmd_images(a) -> int:
    ensure_engine(say=say)
    if a.action == "build":
        for v in a.kafka.split(","):
            console.print(f"{images.ensure_kafka_image(v.strip(), say=say)} ready")
        return 0
    table = Table(title="local kafka-chaos images")
    for col in ("image", "kafka", "size"):
        table.add_column(col)
    for tag, version, size in images.local_images():
        table.add_row(tag, version, f"{size / 1e6:.0f} MB")
    out.print(table)
    return 0


def cmd_clean(a) -> int:
    containers, networks = labels.clean(a.run)
    console.print(f"removed {containers} container(s) and {networks} network(s)")
    return 0


def cmd_scenarios(a) -> int:
    table = Table(title="built-in scenarios")
    for col in ("name", "kafka", "guarantee checked", "expect"):
        table.add_column(col)
    for path in catalog().values():
        for s in load(path):
            table.add_row(s.name, f"{s.kafka.version} {s.kafka.metadata}", s.guarantee or s.description,
                          ", ".join(s.expect) or "pass")
    out.print(table)
    return 0


def cmd_setup(a) -> int:
    ensure_engine(say=say)
    for v in a.kafka.split(","):
        images.ensure_kafka_image(v.strip(), say=say)
    class_archive.ensure(say=say)
    console.print("Docker engine, images and the Spark class archive ready")
    return 0


RUNS_DIR = {"type": Path, "default": Path("runs"), "help": "where run directories go (default: runs/)"}


def suite_options(p: argparse.ArgumentParser) -> None:
    """--seed, --seeds, --duration and --runs-dir, shared by `suite` and `compare`."""
    p.add_argument("--seed", type=int, help="the first seed of every scenario (default: each scenario's own)")
    p.add_argument("--seeds", type=int, default=1, help="runs per scenario with consecutive seeds")
    p.add_argument("--duration")
    p.add_argument("--runs-dir", **RUNS_DIR)


class Parser(argparse.ArgumentParser):
    """No abbreviated options: `--seed 42` must never be taken for `--seeds 42` (42 runs of every scenario)."""

    def __init__(self, **kwargs) -> None:
        super().__init__(allow_abbrev=False, **kwargs)


def parser() -> argparse.ArgumentParser:
    p = Parser(prog="kchaos", description="Jepsen-style chaos testing for real Apache Kafka")
    sub = p.add_subparsers(dest="cmd", required=True)  # subcommands' parsers are Parsers too

    r = sub.add_parser("run", help="run one scenario (a YAML file or a built-in name)")
    r.add_argument("scenario")
    r.add_argument("--kafka")
    r.add_argument("--seed", type=int)
    r.add_argument("--duration")
    r.add_argument("--runs-dir", **RUNS_DIR)
    r.set_defaults(fn=cmd_run)

    s = sub.add_parser("suite", help="run a suite of built-in scenarios (smoke, nightly)")
    s.add_argument("suite")
    s.add_argument("--kafka")
    suite_options(s)
    s.set_defaults(fn=cmd_suite)

    an = sub.add_parser("analyze", help="re-check a run directory (works on a run killed half-way)")
    an.add_argument("run_dir", type=Path)
    an.add_argument("--spark-master", help="e.g. spark://127.0.0.1:7077 (default local[*])")
    an.set_defaults(fn=cmd_analyze)

    c = sub.add_parser("compare", help="run a suite on several Kafka versions and tabulate")
    c.add_argument("--kafka", required=True, help="comma-separated versions")
    c.add_argument("--suite", default="smoke")
    suite_options(c)
    c.set_defaults(fn=cmd_compare)

    rp = sub.add_parser("replay", help="repeat a run's exact fault schedule")
    rp.add_argument("run_dir", type=Path)
    rp.add_argument("--runs-dir", **RUNS_DIR)
    rp.set_defaults(fn=cmd_replay)

    im = sub.add_parser("images", help="build or list Kafka images")
    im.add_argument("action", choices=["build", "list"])
    im.add_argument("--kafka", default=DEFAULT_VERSION)
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
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.fn(args)
    except ChaosError as exc:
        console.print(f"[red]kchaos: {exc}[/red]", highlight=False, soft_wrap=True, markup=True)
        return exc.exit_code
    except KeyboardInterrupt:
        console.print("[yellow]interrupted; containers removed, history kept[/yellow]")
        return 130


if __name__ == "__main__":
    sys.exit(main())
