"""What a user touches: kchaos run end to end, the report in a real browser, bad input, analyze
after a kill."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import docker
import matplotlib.image as mpimg
import pyarrow.parquet as pq
import pytest

from harness import labels
from harness.apt import apt_install
from harness.labels import OWNER

KCHAOS = [sys.executable, "-m", "kchaos"]
SHORT = """
name: e2e
topic: {partitions: 2}
producer: {count: 1, rate: 300}
consumer: {count: 1}
faults: [{fault: kill, target: leader, every: 30s, for: 3s, after: 4s}]
duration: 15s
"""


def kchaos(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([*KCHAOS, *args], capture_output=True, text=True, timeout=timeout)


def labelled() -> int:
    return len(labels.labelled(docker.from_env()))


def holding(directory: Path) -> set[int]:
    """Processes with a file under `directory` open."""
    pids = set()
    for fd in Path("/proc").glob("[0-9]*/fd/*"):
        try:
            if os.readlink(fd).startswith(f"{directory}/"):
                pids.add(int(fd.parts[2]))
        except OSError:
            continue
    return pids


def chromium() -> str:
    """Debian's Chromium, installed on first use (root on Debian), for looking at the report as a
    person would."""
    if not shutil.which("chromium"):
        apt_install("chromium")
    return shutil.which("chromium") or "chromium"


def screenshot(html: Path, png: Path) -> None:
    subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                    "--no-first-run", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync",
                    f"--user-data-dir={png.parent / 'chromium-profile'}", "--window-size=1200,2200",
                    f"--screenshot={png}",
                    html.as_uri()], check=True, capture_output=True, timeout=120)


def test_malformed_scenario_one_message_exit_2_no_container(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nproducer: {acks: al}\n")
    before = labelled()
    done = kchaos("run", str(bad), "--runs-dir", str(tmp_path / "runs"))
    assert done.returncode == 2
    assert "Expected one of '0', '1', 'all' but got producer.acks='al'" in done.stderr
    assert "Traceback" not in done.stderr
    assert labelled() == before == 0
    assert not (tmp_path / "runs").exists()


def test_unknown_kafka_version_names_what_central_answered(tmp_path):
    done = kchaos("run", "acks-all-leader-kill", "--kafka", "9.9.9", "--runs-dir", str(tmp_path))
    assert (done.returncode == 2
            and "Kafka 9.9.9 is not on Maven Central" in done.stderr), done.stderr
    assert ("kafka_2.13,kafka_2.12,kafka_2.11}:9.9.9" in done.stderr
            and "Nearest supported: 4." in done.stderr)
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def test_run_end_to_end_writes_verdict_report_and_junit_and_the_charts_render(tmp_path):
    scenario = tmp_path / "e2e.yaml"
    scenario.write_text(SHORT)
    done = kchaos("run", str(scenario), "--runs-dir", str(tmp_path / "runs"))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "kafka-chaos summary" in done.stdout and "e2e" in done.stdout
    (run_dir,) = (tmp_path / "runs" / "e2e").iterdir()
    result = json.loads((run_dir / "results.json").read_text())
    assert result["verdict"] is True and result["metrics"]["acked"] > 1000
    took = result["durations"]
    assert took["run_s"] > took["workload_s"] > 0 and took["analysis_s"] > 0, took
    assert (result["badge"], result["client"]["library"]) == ("PASS", "librdkafka")
    assert result["facts"]["drain_complete"] and result["facts"]["replicas_dumped"]
    # sampled at the workload's start and when sampling stopped
    memory = result["metrics"]["memory"]
    assert (memory["samples"] >= 2
            and 30 < memory["harness_peak_mib"] <= memory["peak_mib"] < 4096), memory
    samples = [json.loads(d) for d in pq.read_table(run_dir / "history" / "events.parquet",
                                                    filters=[("kind", "=", "memory")])["detail"]
               .to_pylist()]
    # the harness may peak after its clients are gone
    during = [s for s in samples if not s.get("end")]
    assert during and all(s["clients"] == sum(s["each"].values()) > 0 for s in during), samples
    assert any(f["fault"] == "kill" for f in json.loads((run_dir / "schedule.json").read_text()))
    assert "testcase" in (tmp_path / "runs" / "junit-e2e.xml").read_text()
    html = (run_dir / "report.html").read_text()
    assert html.count("data:image/png;base64,") == 1 and 'id="headline">All ' in html
    png = tmp_path / "report.png"
    screenshot(run_dir / "report.html", png)
    img = mpimg.imread(png)
    assert img.shape[0] > 1000 and img.std() > 0.05  # a rendered page with charts, not a blank one
    assert labelled() == 0

    again = kchaos("analyze", str(run_dir))  # a run directory is self-contained
    assert again.returncode == 0 and json.loads((run_dir / "results.json")
                                                .read_text())["counts"] == \
        result["counts"]


@pytest.mark.slow  # make test-all: a second run; unit tests pin that a seed plans one schedule
def test_a_replay_runs_the_schedule_of_the_run_it_replays(tmp_path):
    scenario = tmp_path / "e2e.yaml"
    scenario.write_text(SHORT)
    done = kchaos("run", str(scenario), "--runs-dir", str(tmp_path / "runs"))
    assert done.returncode == 0, done.stderr[-3000:]
    (run_dir,) = (tmp_path / "runs" / "e2e").iterdir()
    replay = kchaos("replay", str(run_dir), "--runs-dir", str(tmp_path / "replays"))
    assert replay.returncode == 0, replay.stderr[-3000:]
    (replayed,) = (tmp_path / "replays" / "e2e").iterdir()
    assert (replayed / "schedule.json").read_text() == (run_dir / "schedule.json").read_text()


def test_run_killed_half_way_leaves_nothing_running_and_is_analyzable(tmp_path):
    scenario = tmp_path / "e2e.yaml"
    scenario.write_text(SHORT.replace("duration: 15s", "duration: 120s"))
    proc = subprocess.Popen([*KCHAOS, "run", str(scenario), "--runs-dir", str(tmp_path / "runs")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 180
    sends = None
    while time.monotonic() < deadline:
        # one part per producer process
        found = list((tmp_path / "runs").glob("e2e/*/history/sends.*.jsonl"))
        if found and sum(f.stat().st_size for f in found) > 20_000:
            sends = found[0]
            break
        time.sleep(1)
    assert sends, "the run never started writing its history"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    # the run's watchdog removes its cluster; nobody calls `kchaos clean`
    deadline = time.monotonic() + 90
    while (labelled() or docker.from_env()
           .networks.list(filters={"label": OWNER})) and time.monotonic() < deadline:
        time.sleep(1)
    assert labelled() == 0 and not docker.from_env().networks.list(filters={"label": OWNER})
    run_dir = sends.parent.parent
    done = kchaos("analyze", str(run_dir))
    # unknown fails the command unless --allow-unknown
    assert done.returncode == 5, done.stderr[-2000:]
    result = json.loads((run_dir / "results.json").read_text())
    assert result["verdict"] is None and result["metrics"]["acked"] > 0
    assert any("final drain never ran" in u for u in result["unknown_because"])
    # the run's client processes notice their runner is gone, settle what they sent and exit (their
    # parent, the fork server, outlives the runner)
    deadline = time.monotonic() + 120
    while holding(run_dir / "history") and time.monotonic() < deadline:
        time.sleep(1)
    assert not holding(run_dir / "history")


@pytest.mark.parametrize("suite", ["smoke"])
def test_suites_name_existing_scenarios(suite):
    from kchaos.catalog import suite_files

    assert suite_files(suite)
