"""`kchaos`: run scenarios and suites, analyze, compare versions, replay, build images, clean up."""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import yaml
from rich.console import Console
from rich.live import Live
from rich.table import Table

from harness import images, labels
from harness.errors import ChaosError, ClusterError, UsageError
from harness.runner import Tick
from harness.scenario import Scenario, expand, load, seconds

CATALOG = Path(__file__).resolve().parents[1] / "scenarios"
console = Console(stderr=True)
out = Console(width=None if sys.stdout.isatty() else 160)  # CI logs: wide enough for the summary


def catalog() -> dict[str, Path]:
    """Built-in scenarios by name."""
    return {p.stem: p for p in sorted(CATALOG.glob("*.yaml")) if p.name != "suites.yaml"}


def suite_files(suite: str) -> list[Path]:
    suites = yaml.safe_load((CATALOG / "suites.yaml").read_text())
    if suite not in suites:
        raise UsageError(f"Expected one of {', '.join(map(repr, suites))} but got suite={suite!r}")
    names = suites[suite]
    if names == "all":
        return list(catalog().values())
    missing = [n for n in names if n not in catalog()]
    if missing:
        raise UsageError(f"suites.yaml: suite {suite!r} names unknown scenarios {missing}")
    return [catalog()[n] for n in names]


def resolve_scenario(arg: str) -> Path:
    """A path, or the name of a built-in scenario."""
    p = Path(arg)
    if p.exists() or p.suffix in (".yaml", ".yml"):
        return p
    if arg in catalog():
        return catalog()[arg]
    raise UsageError(f"No scenario file {arg!r} and no built-in scenario of that name "
                     f"(built-in: {', '.join(catalog())})")


def override(scenarios: list[Scenario], kafka: str | None, seed: int | None, duration: str | None) -> list[Scenario]:
    """Apply --kafka/--seed/--duration, re-validating so errors still name the field."""
    if kafka:
        images.check_version(kafka)
    out_list = []
    for s in scenarios:
        raw = json.loads(s.model_dump_json(by_alias=True))
        if kafka:
            raw["kafka"]["version"] = kafka
        if seed is not None:
            raw["seed"] = seed
        if duration:
            raw["duration"] = seconds(duration)
        out_list.extend(expand(raw, f"{s.name} (with command-line overrides)"))
    return out_list


class Progress:
    """One live status line: phase, time left, acks/s, errors/s and active faults."""

    def __init__(self, name: str) -> None:
        self.name, self.last, self.live = name, (time.monotonic(), 0, 0), None
        self.rates = (0.0, 0.0)

    def __enter__(self) -> Progress:
        self.live = Live(self.render(Tick("start")), console=console, refresh_per_second=4, transient=True)
        self.live.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.live.__exit__(*exc)

    def render(self, t: Tick) -> str:
        left = f" · {t.remaining:4.0f}s left" if t.remaining else ""
        rates = f" · {self.rates[0]:6.0f} acks/s · {self.rates[1]:5.0f} errors/s" if t.phase == "faults" else ""
        active = f" · [red]{t.faults}[/red]" if t.faults else ""
        return f"[bold]{self.name}[/bold] · {t.phase}{left}{rates}{active}"

    def __call__(self, t: Tick) -> None:
        now = time.monotonic()
        if t.phase == "faults" and now > self.last[0]:
            dt = now - self.last[0]
            self.rates = ((t.acked - self.last[1]) / dt, (t.errors - self.last[2]) / dt)
            self.last = (now, t.acked, t.errors)
        self.live.update(self.render(t))


def summary(results: list[dict]) -> Table:
    table = Table(title="kafka-chaos summary")
    for col in ("scenario", "kafka", "verdict", "anomalies (* allowed)", "unavailable"):
        table.add_column(col)
    colors = {"true": "green", "false": "red", "unknown": "yellow"}
    for r in results:
        seen = [f"{k}={n}{'*' if k in r['allowed'] else ''}" for k, n in r["counts"].items() if n]
        verdict = f"[{colors[r['verdict']]}]{r['verdict']}[/]"
        if "error" in r:
            verdict += " [red](harness error)[/]"
        if r["missing_expect"]:
            verdict += f" [red](missed expect: {', '.join(r['missing_expect'])})[/]"
        table.add_row(r["scenario"], r["kafka"], verdict, ", ".join(seen) or "-",
                      f"{r['metrics']['unavailable_s']}s" if r["metrics"] else "-")
    return table


def run_many(scenarios: list[Scenario], root: Path, suite: str, ops=None) -> list[dict]:
    """Run scenarios one after another (one cluster at a time); write junit.xml; print the summary.
    `ops` replays a recorded fault schedule instead of planning one from the seed."""
    from harness.engine import ensure_engine
    from reports.pipeline import run_and_check
    from reports.render import write_junit

    ensure_engine(say=lambda m: console.print(m))
    results = []
    for s in scenarios:
        with Progress(s.name) as progress:
            outcome = run_and_check(s, root, progress, ops, keep_going=True)
        r = outcome.result
        if "error" in r:
            console.print(f"[red]{s.name}: harness error, going on with the next run: {r['error']}[/red]")
        else:
            console.print(f"{s.name}: valid={r['verdict']} → {outcome.run_dir / 'report.html'}")
        results.append(r)
    junit = write_junit(results, root / f"junit-{suite}.xml", suite)
    out.print(summary(results))
    console.print(f"JUnit: {junit}")
    return results


def cmd_run(a) -> int:
    scenarios = override(load(resolve_scenario(a.scenario)), a.kafka, a.seed, a.duration)
    return exit_code(run_many(scenarios, a.runs_dir, scenarios[0].name))


def with_seeds(scenarios: list[Scenario], seeds: int, first: int | None = None) -> list[Scenario]:
    """Each scenario with its own seed (or `first`) and the next `seeds - 1` ones."""
    return [s for base in scenarios for i in range(seeds)
            for s in override([base], None, (base.seed if first is None else first) + i, None)]


def cmd_suite(a) -> int:
    scenarios = with_seeds([s for f in suite_files(a.suite) for s in load(f)], a.seeds, a.seed)
    scenarios = override(scenarios, a.kafka, None, a.duration)
    return exit_code(run_many(scenarios, a.runs_dir, a.suite))


def exit_code(results: list[dict]) -> int:
    """4 when the harness could not complete a run, 1 when a verdict failed, else 0."""
    if any("error" in r for r in results):
        return ClusterError.exit_code
    return 1 if any(r["failed"] for r in results) else 0


def load_run(run_dir: Path) -> Scenario:
    if not (run_dir / "scenario.json").exists():
        raise UsageError(f"{run_dir} is not a run directory (no scenario.json)")
    return Scenario.model_validate_json((run_dir / "scenario.json").read_text())


def cmd_analyze(a) -> int:
    from reports.pipeline import check

    scenario = load_run(a.run_dir)
    r = check(scenario, a.run_dir, a.spark_master).result
    out.print(summary([r]))
    console.print(f"report: {a.run_dir / 'report.html'}")
    return exit_code([r])


def cmd_replay(a) -> int:
    from faults.schedule import load as load_schedule

    scenario = load_run(a.run_dir)
    ops = load_schedule(a.run_dir / "schedule.json")
    return exit_code(run_many([scenario], a.runs_dir, f"replay-{scenario.name}", ops))


def cmd_compare(a) -> int:
    from reports.compare import write_compare

    versions = [v.strip() for v in a.kafka.split(",") if v.strip()]
    for v in versions:
        images.check_version(v)
    files = suite_files(a.suite)
    results = []
    for v in versions:
        scenarios = [s for f in files for s in load(f)
                     if not (s.kafka.metadata == "zookeeper" and images.major(v) >= 4)]  # no ZooKeeper in 4.x
        results += run_many(override(with_seeds(scenarios, a.seeds, a.seed), v, None, a.duration), a.runs_dir,
                            f"compare-{v}")
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    html, md = write_compare(results, a.runs_dir / f"compare-{stamp}")
    console.print(f"comparison: {html} and {md}")
    return exit_code(results)


def cmd_images(a) -> int:
    from harness.engine import ensure_engine

    ensure_engine(say=lambda m: console.print(m))
    if a.action == "build":
        for v in a.kafka.split(","):
            console.print(f"{images.ensure_kafka_image(v.strip(), say=lambda m: console.print(m))} ready")
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
    from harness.engine import ensure_engine
    from reports import class_archive

    ensure_engine(say=lambda m: console.print(m))
    for v in a.kafka.split(","):
        images.ensure_kafka_image(v.strip(), say=lambda m: console.print(m))
    class_archive.ensure(say=lambda m: console.print(m))
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
    im.add_argument("--kafka", default=images.DEFAULT_VERSION)
    im.set_defaults(fn=cmd_images)

    cl = sub.add_parser("clean", help="remove containers and networks a crashed run left")
    cl.add_argument("--run", help="only this run id")
    cl.set_defaults(fn=cmd_clean)

    sc = sub.add_parser("scenarios", help="list the built-in scenarios")
    sc.add_argument("action", choices=["list"])
    sc.set_defaults(fn=cmd_scenarios)

    st = sub.add_parser("setup", help="make sure a Docker engine runs and the images exist")
    st.add_argument("--kafka", default=",".join(images.SUPPORTED_VERSIONS))
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
