"""Write a run's report.html, and a suite's junit.xml."""

from __future__ import annotations

from pathlib import Path
from xml.etree import ElementTree as ET

from jinja2 import Environment, PackageLoader, select_autoescape

from reports import charts
from reports.result import RunResult

ENV = Environment(loader=PackageLoader("reports", "templates"), autoescape=select_autoescape(["html", "j2"]))


def write_report(result: RunResult, series: dict, run_dir: Path) -> Path:
    """A self-contained HTML page: verdict, anomalies with examples, charts with fault windows shaded."""
    t0, faults = series["t0"], series["faults"]
    html = ENV.get_template("report.html.j2").render(
        r=result,
        charts={"throughput": charts.throughput_latency(series["per_second"], faults, t0),
                "isr": charts.isr_sizes(series["metadata"], faults, t0)},
        faults=charts.fault_rows(faults, t0))
    path = run_dir / "report.html"
    path.write_text(html)
    return path


def write_junit(results: list[RunResult], path: Path, suite: str) -> Path:
    """One test case per scenario run: error when the harness could not complete it, failure on a violated
    guarantee or missed expectation, skipped on unknown."""
    failures = sum(1 for r in results if r.failed and not r.error)
    root = ET.Element("testsuite", name=f"kafka-chaos.{suite}", tests=str(len(results)), failures=str(failures),
                      errors=str(sum(1 for r in results if r.error)),
                      skipped=str(sum(1 for r in results if r.verdict == "unknown" and not r.failed)))
    for r in results:
        case = ET.SubElement(root, "testcase", classname=f"kafka-chaos.{r.kafka}", name=r.scenario,
                             time=str(r.elapsed_s))
        if r.error:
            ET.SubElement(case, "error", message=r.error)
        elif r.failed:
            what = (f"forbidden anomalies {r.forbidden}" if r.verdict == "false"
                    else f"expected anomalies not seen: {r.missing_expect}")
            ET.SubElement(case, "failure", message=what).text = str(r.counts)
        elif r.verdict == "unknown":
            ET.SubElement(case, "skipped", message="; ".join(r.unknown_because))
        ET.SubElement(case, "system-out").text = r.run_dir
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
    return path
