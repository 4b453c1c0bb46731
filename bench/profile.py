"""`BENCH=profile`: where one PySpark analysis of a synthetic history spends its time, read from
Spark's event log (jobs, stages and tasks, and the time between them that the driver spends
starting, planning and in Python)."""

from __future__ import annotations

import json
import os
import re
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from bench import measure, synthetic

TOP = 8  # call sites listed by time


@dataclass
class Job:
    """One Spark job: its call site in our code, when it was submitted and completed (seconds), and
    its stages."""

    site: str
    start: float
    end: float
    stages: int

    @property
    def seconds(self) -> float:
        return self.end - self.start


def jobs_of(events: list[dict]) -> tuple[list[Job], float, int]:
    """The jobs of an event log, the seconds from the application's start to its end (or its last
    job's end when the log has no end), and the tasks run."""
    started, jobs, tasks = {}, [], Counter()
    span = [0.0, 0.0]
    for e in events:
        kind = e["Event"]
        if kind == "SparkListenerApplicationStart":
            span[0] = e["Timestamp"] / 1000
        elif kind == "SparkListenerApplicationEnd":
            span[1] = e["Timestamp"] / 1000
        elif kind == "SparkListenerJobStart":
            # a job without our call site (a broadcast, say) is named by its stage
            infos = e["Stage Infos"]
            site = _site(e.get("Properties", {}).get("callSite.short")
                         or (infos[0]["Stage Name"] if infos else "?"))
            started[e["Job ID"]] = (site, e["Submission Time"] / 1000, len(infos))
        elif kind == "SparkListenerStageCompleted":
            tasks[e["Stage Info"]["Stage ID"]] = e["Stage Info"]["Number of Tasks"]
        elif kind == "SparkListenerJobEnd" and e["Job ID"] in started:
            site, t0, stages = started.pop(e["Job ID"])
            jobs.append(Job(site, t0, e["Completion Time"] / 1000, stages))
    end = span[1] or max((j.end for j in jobs), default=span[0])
    return jobs, end - span[0], sum(tasks.values())


def busy(jobs: list[Job]) -> float:
    """Seconds in which at least one job ran (a query's broadcasts run as jobs of their own,
    overlapping it)."""
    total, reach = 0.0, float("-inf")
    for j in sorted(jobs, key=lambda j: j.start):
        total += max(0.0, j.end - max(j.start, reach))
        reach = max(reach, j.end)
    return total


# Spark's name for a query stage that adaptive execution submits on its own thread
AHEAD = "withThreadLocalCaptured"


def _site(call_site: str) -> str:
    """`collect at /x/reports/analysis.py:52` -> `collect at reports/analysis.py:52`."""
    if AHEAD in call_site:
        return "query stages run ahead of their action (adaptive shuffles and broadcasts)"
    return re.sub(r" at .*?/((?:reports|bench|kchaos)/[\w/]+\.py:\d+)", r" at \1", call_site)


def profile(sends: int) -> list[str]:
    """Analyze one synthetic history with the event log on; the wall time beside the time inside
    jobs."""
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMP")) as tmp:
        synthetic.generate(sends, Path(tmp) / "history")
        logs = Path(tmp) / "events"
        logs.mkdir()
        wall, _, _ = measure.run(["bench.engines", "spark", str(Path(tmp) / "history")],
                                 env={"KCHAOS_SPARK_EVENT_LOG": str(logs)})
        # a rolling log is a directory of parts
        files = sorted(f for f in logs.rglob("*") if f.is_file())
        events = [json.loads(line) for f in files for line in f.read_text().splitlines() if line]
        _, _, out = measure.run(["bench.engines", "spark-twice", str(Path(tmp) / "history")])
    jobs, app_s, tasks = jobs_of(events)
    first, again = json.loads(out)["seconds"]
    return _lines(sends, wall, app_s, jobs, tasks) + [
        f"The same analysis twice in one process: {first:.1f} s in a fresh JVM, {again:.1f} s "
        "again "
        "in the warm one (the rest of the first is the JVM compiling Spark's code and ours: what "
        "every fresh `kchaos` process pays once).", ""]


def _lines(sends: int, wall: float, app_s: float, jobs: list[Job], tasks: int) -> list[str]:
    in_jobs = busy(jobs)
    by_site: dict[str, list[Job]] = {}
    for j in jobs:
        by_site.setdefault(j.site, []).append(j)
    top = sorted(by_site.items(), key=lambda kv: -sum(j.seconds for j in kv[1]))[:TOP]
    return [f"## Where the analysis time goes ({sends:,} sends)", "",
            f"Measured {time.strftime('%Y-%m-%d')}.", "",
            f"Command: `BENCH=profile BENCH_SIZES={sends:.0e} make bench`: one PySpark "
            f"analysis (the product's settings) of the synthetic history of {sends:,} sends "
            "the analysis section uses, with Spark's event log on; the baseline is the "
            "process's own wall time.", "",
            "| part | seconds | share of wall time |", "|---|---|---|",
            f"| whole process (baseline) | {wall:.1f} | 100% |",
            f"| before the Spark application started (Python, JVM, session) | {wall - app_s:.1f} | "
            f"{(wall - app_s) / wall:.0%} |",
            f"| while any of {len(jobs)} Spark jobs ran ({sum(j.stages for j in jobs)} stages, "
            f"{tasks} tasks) | {in_jobs:.1f} | {in_jobs / wall:.0%} |",
            f"| between jobs (session start, planning, Python, pandas) | {app_s - in_jobs:.1f} | "
            f"{(app_s - in_jobs) / wall:.0%} |",
            "", f"The {len(top)} call sites that took longest:", "",
            "| call site | jobs | seconds (summed; jobs overlap) |", "|---|---|---|",
            *[f"| `{site}` | {len(js)} | {sum(j.seconds for j in js):.1f} |" for site, js in top],
            ""]
