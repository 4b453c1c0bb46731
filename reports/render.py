"""Write a run's report.html, and a suite's junit.xml."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import yaml
from jinja2 import Environment, PackageLoader, select_autoescape

from contracts.results import RunResult, plan_share
from reports.headline import headline, rule

ENV = Environment(loader=PackageLoader("reports", "templates"),
                  autoescape=select_autoescape(["html", "j2"]))


def cell(value: Any) -> str:
    """A value as a table cell reads it: mappings as `k=v, ...`, lists joined, nothing for None."""
    if value is None:
        return ""
    if isinstance(value, dict):
        return ", ".join(f"{k}={cell(v)}" for k, v in value.items())
    if isinstance(value, list | tuple):
        if any(isinstance(v, dict) for v in value):
            return "; ".join(cell(v) for v in value)
        return "[" + ", ".join(cell(v) for v in value) + "]"
    return str(value)


ENV.filters["cell"] = cell
ENV.globals["plan_share"] = plan_share


def write_report(result: RunResult, series: dict, run_dir: Path) -> Path:
    """A self-contained HTML page: the headline and badge, the timeline, anomalies with examples,
    faults planned and done, settings. Every path in it is relative to the run directory."""
    # matplotlib, pandas: imported when a report is drawn, not by every command
    from reports import charts, interactive

    faults = charts.fault_rows(series["faults"], series["t0"])
    m = result.metrics
    sends = m.acked + m.failed + m.indeterminate if m else 0
    marks = [(span.first_s, span.last_s) for name, span in result.spans.items()
             if name in result.forbidden]
    sentence, doc = headline(result, faults)
    because = rule(result)
    html = ENV.get_template("report.html.j2").render(
        r=result, headline=sentence, headline_doc=doc, rule=because, faults=faults,
        settings=yaml.safe_dump(result.settings, sort_keys=False, width=100),
        timeline=charts.timeline(series, m.unavailability if m else [], marks, sends),
        sample=len(series["sample"]), sends=sends, uplot=interactive.library(),
        timeline_data=interactive.data(series, faults))
    path = run_dir / "report.html"
    path.write_text(html)
    return path


def case_name(r: RunResult) -> str:
    """`scenario[version, seed]`, the version said once: unique per run in a suite of several
    versions and seeds."""
    return f"{r.row_name}[{r.kafka}, seed {r.seed}]"


EXAMPLES_SHOWN = 3  # examples of each anomaly in a JUnit body


def junit_body(r: RunResult) -> str:
    """What a CI page shows under the headline: counts of the anomalies that occurred, their first
    examples, why a verdict is unknown, and the report's path."""
    lines = [f"{r.badge}: {r.badge.meaning}", *filter(None, [rule(r)])]
    for name, n in r.counts.items():
        if n:
            kind = "allowed" if name in r.allowed else "forbidden"
            lines.append(f"{name}: {n:,} ({kind})")
            lines += [f"  {cell(e)}" for e in r.examples.get(name, [])[:EXAMPLES_SHOWN]]
    lines += [f"unknown because {u}" for u in r.unknown_because]
    lines += [plan_share(r.facts) or "no fault ops planned"] if r.facts else []
    return "\n".join([*lines, f"report: {page(r)}"])


def write_junit(results: list[RunResult], path: Path, suite: str,
                allow_unknown: bool = False) -> Path:
    """One test case per run, named `scenario[version, seed]` under the class `kchaos.<suite>` (no
    dots a CI reads as packages): error when the harness could not complete it, failure on FAIL and
    (unless `allow_unknown`) on UNKNOWN or NOT PROVOKED, skipped on those when allowed; the headline
    is the message or the system-out."""
    def fails(r: RunResult) -> bool:
        return not r.error and (r.failed or (not r.badge.green and not allow_unknown))

    classname = "kchaos." + "".join(c if c.isalnum() or c in "-_" else "_" for c in suite)
    root = ET.Element(
        "testsuite", name=classname, tests=str(len(results)),
        failures=str(sum(map(fails, results))), errors=str(sum(1 for r in results if r.error)),
        skipped=str(sum(1 for r in results if not r.badge.green and not fails(r) and not r.error)))
    for r in results:
        case = ET.SubElement(root, "testcase", classname=classname, name=case_name(r),
                             time=str(r.durations.total_s))
        sentence = headline(r, [])[0]
        if r.error:
            ET.SubElement(case, "error", message=r.error).text = junit_body(r)
        elif fails(r):
            ET.SubElement(case, "failure", message=sentence).text = junit_body(r)
        elif not r.badge.green:
            ET.SubElement(case, "skipped", message=sentence)
        ET.SubElement(case, "system-out").text = f"{sentence}\n{junit_body(r)}"
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
    return path


def page(r: RunResult) -> Path:
    """The page that shows a run: its report.html, or its results.json when the harness could not
    complete the run or the report was not kept (a committed comparison keeps only the failing runs'
    reports)."""
    report = Path(r.run_dir) / "report.html"
    return report if report.exists() and not r.error else report.with_name("results.json")


def step_summary(results: list[RunResult], suite: str, base: Path) -> str:
    """A GitHub step summary (Markdown): one row per run with its badge, counts and report (relative
    to `base`)."""
    lines = [f"### kafka-chaos {suite}", "", "| run | result | anomalies (* allowed) | report |",
             "|---|---|---|---|"]
    for r in results:
        seen = ", ".join(f"{k}={n}{'*' if k in r.allowed else ''}" for k,
                         n in r.counts.items() if n) or "-"
        report = page(r)
        shown = os.path.relpath(report, base) if report.is_absolute() else str(report)
        lines.append(f"| `{case_name(r)}` | **{r.badge}** | {seen} | `{shown}` |")
    return "\n".join(lines) + "\n\n"
