"""What the CLI shows while runs go on and when they end: a live status line and the summary table."""

from __future__ import annotations

import sys
import time

from rich.console import Console
from rich.live import Live
from rich.table import Table

from kchaos.run import Tick
from reports.result import RunResult

console = Console(stderr=True)
out = Console(width=None if sys.stdout.isatty() else 160)  # CI logs: wide enough for the summary


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


def summary(results: list[RunResult]) -> Table:
    """The suite's table: one row per run."""
    table = Table(title="kafka-chaos summary")
    for col in ("scenario", "kafka", "verdict", "anomalies (* allowed)", "unavailable"):
        table.add_column(col)
    colors = {"true": "green", "false": "red", "unknown": "yellow"}
    for r in results:
        seen = [f"{k}={n}{'*' if k in r.allowed else ''}" for k, n in r.counts.items() if n]
        verdict = f"[{colors[r.verdict]}]{r.verdict}[/]"
        if r.error:
            verdict += " [red](harness error)[/]"
        if r.missing_expect:
            verdict += f" [red](missed expect: {', '.join(r.missing_expect)})[/]"
        table.add_row(r.scenario, r.kafka, verdict, ", ".join(seen) or "-",
                      f"{r.metrics.unavailable_s}s" if r.metrics else "-")
    return table
