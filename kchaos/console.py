"""What the CLI shows while runs go on and when they end: a live status line on a terminal, plain
progress lines elsewhere (CI logs), and the summary table. Every user string is escaped: `[fault=x]`
is a matrix tag, not markup."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

from rich.console import Console
from rich.live import Live
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from contracts.faultkinds import FAULT_KINDS
from contracts.fields import FAULT_PARAMS
from contracts.results import Badge, RunResult
from contracts.scenario import Scenario
from contracts.versions import METADATA_MODES, default_metadata, java_for, metadata_problem
from faults.plan import plan
from kchaos.catalog import contention
from runloop.progress import Tick

console = Console(stderr=True)
out = Console(width=None if sys.stdout.isatty() else 160)  # CI logs: wide enough for the summary
PLAIN_EVERY_S = 10.0  # a plain progress line at least this often while a phase goes on


COLORS = {Badge.PASS: "green", Badge.EXPECTED_ANOMALY: "blue", Badge.CAUGHT: "cyan",
          Badge.KNOWN_BUG: "magenta", Badge.FAIL: "red", Badge.NOT_PROVOKED: "yellow",
          Badge.UNKNOWN: "yellow"}


class Progress:
    """Progress of run `index` of `total`: phase, time left, acks/s, errors/s and active faults."""

    def __init__(self, label: str, index: int = 1, total: int = 1) -> None:
        self.label, self.counter = label, f"[{index}/{total}]"
        self.last, self.rates = (time.monotonic(), 0, 0), (0.0, 0.0)
        self.live: Live | None = None
        self.said = (0.0, "")

    def __enter__(self) -> Progress:
        if console.is_terminal:
            self.live = Live(Text(self.line(Tick("start"))), console=console, refresh_per_second=4,
                             transient=True)
            self.live.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self.live is not None:
            self.live.__exit__(*exc)

    def line(self, t: Tick) -> str:
        """`[3/17] acks1-leader-kill 4.3.1 seed 42: faults, 30 s left, 9.8k acks/s, kill(3)`"""
        parts = [t.phase]
        if t.remaining:
            parts.append(f"{t.remaining:.0f} s left")
        if t.phase == "faults":
            parts += [f"{self.rates[0] / 1000:.1f}k acks/s", f"{self.rates[1]:.0f} errors/s"]
        if t.faults:
            parts.append(t.faults)
        return f"{self.counter} {self.label}: {', '.join(parts)}"

    def __call__(self, t: Tick) -> None:
        now = time.monotonic()
        if t.phase == "faults" and now > self.last[0]:
            dt = now - self.last[0]
            self.rates = ((t.acked - self.last[1]) / dt, (t.errors - self.last[2]) / dt)
            self.last = (now, t.acked, t.errors)
        text = self.line(t)
        if self.live is not None:
            self.live.update(Text(text))
        elif t.phase != self.said[1] or now - self.said[0] >= PLAIN_EVERY_S:
            # one line per tick in CI logs
            console.print(text, markup=False, highlight=False, soft_wrap=True)
            self.said = (now, t.phase)


def badge(r: RunResult) -> Text:
    """The run's badge, coloured."""
    return Text(r.badge, style=COLORS[r.badge])


def summary(results: list[RunResult]) -> Table:
    """The suite's table: one row per run (every cell plain text, never markup)."""
    table = Table(title="kafka-chaos summary")
    for col in ("scenario", "kafka", "seed", "result", "anomalies (* allowed)", "fault ops fired",
                "unavailable"):
        table.add_column(col)
    for r in results:
        seen = [f"{k}={n}{'*' if k in r.allowed else ''}" for k, n in r.counts.items() if n]
        result = badge(r)
        if r.error:
            result.append(" (harness error)", style="red")
        if r.badge is Badge.NOT_PROVOKED:
            result.append(f" ({', '.join(r.missing_expect)} not seen)", style="yellow")
        if r.known_bug:
            result.append(f" ({r.known_bug})")
        ops = r.facts.ops if r.facts else {}
        late = f", {r.facts.late_ops} late" if r.facts and r.facts.late_ops else ""
        fired = f"{ops.get('fired', 0)}/{sum(ops.values())}{late}" if ops else "-"
        table.add_row(Text(r.scenario), r.kafka, str(r.seed), result, Text(", ".join(seen) or "-"),
                      fired, f"{r.metrics.unavailable_s}s" if r.metrics else "-")
    return table


def say_result(r: RunResult, report: str) -> None:
    """One line per finished run: its badge, and where its report is (or its harness error)."""
    head = Text(f"{r.scenario} {r.kafka} seed {r.seed}: ")
    if r.error:
        console.print(head + Text("harness error, going on with the next run: "
                                  f"{r.error}", style="red"))
    else:
        console.print(head + badge(r) + Text(f" → {report}"))


def error_line(message: str) -> None:
    """A user error: `kchaos: ...` in red, its text never read as markup."""
    console.print(f"[red]kchaos: {escape(message)}[/red]", highlight=False, soft_wrap=True)


def show_available(versions: list[str], broker_jar: Callable[[str], str | None]) -> int:
    """The Kafka releases Maven Central offers that the harness runs, with the JRE and metadata
    modes of each."""
    table = Table(title="Kafka releases on Maven Central the harness runs")
    for col in ("kafka", "broker jar", "JRE", "metadata modes"):
        table.add_column(col)
    for v in versions:
        # the older mode first
        modes = [m for m in reversed(METADATA_MODES) if metadata_problem(v, m) is None]
        table.add_row(v, broker_jar(v) or "?", f"OpenJDK {java_for(v)}",
                      ", ".join(f"{m} (default)" if m == default_metadata(v) else m for m in modes))
    out.print(table)
    return 0


def say(message: str) -> None:
    """A line of set-up progress on stderr."""
    console.print(message, markup=False, highlight=False)


def settings(s: Scenario, full: bool = False) -> dict:
    """What the scenario file sets (with `full`, every default too), without fields its fault kinds
    do not read."""
    data = s.model_dump(mode="json", by_alias=True, exclude_unset=not full)
    for shown, f in zip(data.get("faults", []), s.faults, strict=True):
        read = frozenset().union(*(FAULT_KINDS[k].params for k in f.fired_kinds()))
        for name in {*FAULT_PARAMS, "kinds"} - read - ({"kinds"} if f.kinds else set()):
            shown.pop(name, None)
    return data


def show_plans(scenarios: list[Scenario], full: bool = False) -> int:
    """Print what each resolved scenario sets (`full`: every setting) and the fault schedule its
    seed plans, and warn of fault lines that contend for brokers; start nothing."""
    for s in scenarios:
        out.print(Text(f"{s.name}: valid, Kafka {s.kafka.version} ({s.kafka.mode}), seed {s.seed}, "
                       f"{s.duration:g} s"))
        for warning in contention(s):
            out.print(Text(f"  warning: {warning}", style="yellow"))
        out.print_json(data=settings(s, full))
        for op in plan(s.faults, s.duration, s.seed):
            f = s.faults[op.index]
            target = ("" if FAULT_KINDS[op.fault].aims in ("itself", "tier")
                      else f" {op.target or f.target}")
            out.print(Text(f"  at {op.at:7.2f} s  {op.fault}{target} for {op.hold:g} s  "
                           f"(faults.{op.index})"))
    return 0
