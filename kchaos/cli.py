"""`kchaos`: the command line. Its parser, and the commands that only read files (validate,
scenarios list); kchaos.commands holds those that start clusters or Spark, imported only when one is
called."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from rich.table import Table
from rich.text import Text

from contracts import provenance, signals
from contracts.errors import UNKNOWN_EXIT, ChaosError
from contracts.results import expectation
from contracts.versions import DEFAULT_VERSION, SUPPORTED_VERSIONS
from kchaos import exits
from kchaos.catalog import catalog, load, resolve_scenario
from kchaos.console import error_line, out, show_plans
from reports.guarantees import allowed
from workloads.malloc import bound_malloc_arenas


def cmd_validate(a) -> int:
    return show_plans([s for f in a.files for s in load(resolve_scenario(f))], a.full)


def cmd_scenarios(a) -> int:
    table = Table(title="built-in scenarios")
    for col in ("name", "kafka", "guarantee checked", "expected badge"):
        table.add_column(col)
    for path in catalog().values():
        for s in load(path, environment=False):  # listing fetches nothing
            table.add_row(Text(s.name), f"{s.kafka.version} {s.kafka.mode}",
                          Text(s.guarantee or s.description), Text(expectation(s, allowed(s))))
    out.print(table)
    return 0


KAFKA = {"help": "the Kafka version to run, VERSION or VERSION:kraft|zookeeper, or an upgrade "
                 "path in quotes, 'A->B' (every upgrade line rolls to B) or "
                 f"'A:zookeeper->kraft' (default: the scenario's, else {DEFAULT_VERSION})"}
CLIENT = {"help": "the client library of every role the workload runs: librdkafka, java (the "
                  "cluster's own kafka-clients) or java:X.Y.Z (default: each role's `client`)"}
DURATION = {"help": "how long the workload runs, like 90s, 5m or 2h (default: the scenario's own)"}
RUN_DIR = "a run directory, such as runs/<scenario>/<stamp>-<seed>"
RUNS_DIR = {"type": Path, "default": Path("runs"),
            "help": "where run directories go (default: runs/)"}


def allow_unknown(p: argparse.ArgumentParser) -> None:
    """--allow-unknown, for every command that ends in verdicts."""
    p.add_argument("--allow-unknown", action="store_true",
                   help=f"exit 0, not {UNKNOWN_EXIT}, on UNKNOWN or NOT PROVOKED runs (when none "
                        "failed)")


def suite_options(p: argparse.ArgumentParser) -> None:
    """--seed, --seeds, --duration, --runs-dir and --allow-unknown, shared by `suite` and
    `compare`."""
    p.add_argument("--seed", type=int, help="the first seed of every scenario (default: each "
                                            "scenario's own)")
    p.add_argument("--seeds", type=int, default=1, help="runs per scenario with consecutive seeds")
    p.add_argument("--duration", **DURATION)
    p.add_argument("--runs-dir", **RUNS_DIR)
    allow_unknown(p)


class Parser(argparse.ArgumentParser):
    """No abbreviated options: `--seed 42` must never be taken for `--seeds 42` (42 runs of every
    scenario)."""

    def __init__(self, **kwargs) -> None:
        super().__init__(allow_abbrev=False, **kwargs)


def parser() -> argparse.ArgumentParser:
    p = Parser(prog="kchaos", description="Jepsen-style chaos testing for real Apache Kafka")
    version = f"kchaos {provenance.version()} ({provenance.commit()})"
    p.add_argument("--version", action="version", version=version)
    sub = p.add_subparsers(dest="cmd", required=True)  # subcommands' parsers are Parsers too

    r = sub.add_parser("run", help="run one scenario (a YAML file or a built-in name)")
    r.add_argument("scenario", help="a scenario file, or a built-in scenario's name (`kchaos "
                                    "scenarios list`)")
    r.add_argument("--kafka", **KAFKA)
    r.add_argument("--client", **CLIENT)
    r.add_argument("--seed", type=int, help="the fault schedule's seed (default: the scenario's "
                                            "own)")
    r.add_argument("--duration", **DURATION)
    r.add_argument("--runs-dir", **RUNS_DIR)
    r.add_argument("--dry-run", action="store_true",
                   help="print the resolved scenario and its schedule only")
    allow_unknown(r)
    r.set_defaults(fn="run")

    v = sub.add_parser("validate", help="check scenario files and print each one's schedule; start "
                                        "nothing")
    v.add_argument("files", nargs="+", help="scenario files or built-in scenario names")
    v.add_argument("--full", action="store_true", help="print every setting, defaults included, "
                                                       "not only those set")
    v.set_defaults(fn="validate")

    s = sub.add_parser("suite", help="run a suite of built-in scenarios (smoke, nightly)")
    s.add_argument("suite", help="a suite of scenarios/suites.yaml: smoke, transactions, power, "
                                 "groups, latency, regressions or nightly")
    s.add_argument("--kafka", **KAFKA)
    s.add_argument("--client", **CLIENT)
    suite_options(s)
    s.set_defaults(fn="suite")

    an = sub.add_parser("analyze", help="re-check a run directory (works on a run killed half-way)")
    an.add_argument("run_dir", type=Path, help=RUN_DIR)
    an.add_argument("--spark-master", help="e.g. spark://127.0.0.1:7077 (default local[*])")
    allow_unknown(an)
    an.set_defaults(fn="analyze")

    c = sub.add_parser("compare", help="run a suite on several Kafka versions and tabulate")
    c.add_argument("--kafka", help="comma-separated versions or upgrade paths (in quotes: "
                                   "'3.9.2->4.4.0,4.3.1->4.4.0'), each a column")
    c.add_argument("--clients", help="comma-separated clients, each a column on every version: "
                                     "librdkafka, java, java:X.Y.Z")
    c.add_argument("--suite", default="smoke", help="the suite to run on each version (default: "
                                                    "smoke)")
    c.add_argument("--shard", help="I/N: run only slice I of N of the version x scenario x seed "
                                   "matrix")
    c.add_argument("--merge", nargs="+", type=Path, metavar="DIR",
                   help="tabulate the runs under these directories")
    c.add_argument("--spark-master", help="analyze each run on this Spark master (e.g. "
                                          "spark://host:7077)")
    suite_options(c)
    c.set_defaults(fn="compare")

    replaying(sub)
    housekeeping(sub)
    return p


def replaying(sub) -> None:
    """The commands that read or start again from a run directory: history, shrink and replay."""
    hi = sub.add_parser("history", help="print a run's history as text, in time order with its "
                                        "fault ops")
    hi.add_argument("run_dir", type=Path, help=RUN_DIR)
    hi.add_argument("--table", default="sends,reads",
                    help="comma-separated tables: sends, reads, txns, copies, "
                    "copy_txns, events, metadata (fault ops are always shown; default sends,reads)")
    hi.add_argument("--around", type=float, help="only rows within --window seconds of this time "
                                                 "(seconds since the first send, the report's "
                                                 "axis)")
    hi.add_argument("--window", type=float, default=1.0,
                    help="with --around: how many seconds either side")
    hi.set_defaults(fn="history")

    sh = sub.add_parser("shrink", help="the smallest part of a violating run's fault schedule that "
                                       "still violates")
    sh.add_argument("run_dir", type=Path, help="a run directory whose result is FAIL or KNOWN BUG")
    sh.add_argument("--tries", type=int, default=2, help="seeds each candidate schedule is run on")
    sh.add_argument("--runs-dir", **RUNS_DIR)
    sh.set_defaults(fn="shrink")

    rp = sub.add_parser("replay", help="repeat a run's exact fault schedule")
    rp.add_argument("run_dir", type=Path, help=RUN_DIR)
    rp.add_argument("--runs-dir", **RUNS_DIR)
    allow_unknown(rp)
    rp.set_defaults(fn="replay")


def housekeeping(sub) -> None:
    """Images, clean-up, the catalog and set-up."""
    im = sub.add_parser("images", help="build or list Kafka images")
    im.add_argument("action", choices=["build", "list"], help="build an image, or list those here")
    im.add_argument("--kafka", default=DEFAULT_VERSION,
                    help=f"with build: comma-separated versions (default {DEFAULT_VERSION})")
    im.add_argument("--available", action="store_true",
                    help="with list: the releases Maven Central offers")
    im.set_defaults(fn="images")

    cl = sub.add_parser("clean", help="remove containers and networks a crashed run left")
    cl.add_argument("--run", help="only this run id")
    cl.set_defaults(fn="clean")

    sc = sub.add_parser("scenarios", help="list the built-in scenarios")
    sc.add_argument("action", choices=["list"], help="list them, with the badge each run should "
                                                     "get")
    sc.set_defaults(fn="scenarios")

    st = sub.add_parser("setup", help="make sure a Docker engine runs and the images exist")
    st.add_argument("--kafka", default=",".join(SUPPORTED_VERSIONS),
                    help="comma-separated versions whose images "
                    f"to build (default {','.join(SUPPORTED_VERSIONS)})")
    st.set_defaults(fn="setup")


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    with signals.handled():
        return _dispatch(args)


def command(name: str) -> Callable[[argparse.Namespace], int]:
    """A command's function: those that only read files live here, the rest load the engine with
    kchaos.commands."""
    light = {"validate": cmd_validate, "scenarios": cmd_scenarios}
    if name in light:
        return light[name]
    # Docker, Spark and the clients: imported by the commands that use them
    from kchaos import commands

    return getattr(commands, f"cmd_{name}")


def _dispatch(args: argparse.Namespace) -> int:
    """Run the command; a signal's echoes (errors of the JVM and clients it also ended) end it as
    interrupted."""
    try:
        return command(args.fn)(args)
    except KeyboardInterrupt:
        return exits.interrupted()
    # a signal to the group also ends the Spark JVM and clients
    except (Exception, SystemExit) as exc:
        if signals.SIGNALLED:
            return exits.interrupted()
        if isinstance(exc, ChaosError):
            error_line(str(exc))
            return exc.exit_code
        raise


def entry() -> None:
    """The `kchaos` command; its threads (samplers, nemesis, Spark's gateway) share two malloc
    arenas, as a client's do."""
    bound_malloc_arenas()
    exits.leave(main())


if __name__ == "__main__":
    entry()
