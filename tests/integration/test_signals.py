"""SIGINT and SIGTERM to a run's whole process group, as Ctrl-C and a cancelled CI job send them, at
several phases: the run ends within 30 s with the shell's code, its history readable and nothing of
it left running."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import docker
import pyarrow.parquet as pq
import pytest

from harness.labels import OWNER, labelled
from tests.integration.test_cli import SHORT

SCENARIO = SHORT.replace("name: e2e", "name: signalled").replace("duration: 15s", "duration: 30s")


def phase_of(runs) -> str:
    """The phase run.json says the run is in ('' before it exists)."""
    found = list(runs.glob("signalled/*/run.json"))
    try:
        return json.loads(found[0].read_text())["phase"] if found else ""
    except (ValueError, KeyError):  # caught between writes
        return ""


@pytest.mark.parametrize("phase, sig", [("cluster", signal.SIGTERM), ("faults", signal.SIGINT),
                                        pytest.param(
                                            "drain", signal.SIGTERM, marks=pytest.mark.slow),
                                        pytest.param(
                                            "done", signal.SIGINT, marks=pytest.mark.slow)])
def test_a_signal_to_the_group_ends_the_run_cleanly(tmp_path, phase, sig):
    (tmp_path / "s.yaml").write_text(SCENARIO)
    runs = tmp_path / "runs"
    proc = subprocess.Popen([
        sys.executable, "-m", "kchaos", "run", str(tmp_path / "s.yaml"), "--runs-dir",
        str(runs)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + 240
    while phase_of(runs) != phase and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert phase_of(runs) == phase, f"never reached {phase}: {proc.stderr.read().decode()[-2000:]}"
    os.killpg(proc.pid, sig)
    signalled = time.monotonic()
    code = proc.wait(60)
    took = time.monotonic() - signalled
    assert code == 128 + sig and took < 30, (code, took, proc.stderr.read().decode()[-2000:])
    client = docker.from_env()
    assert not labelled(client)
    assert not client.networks.list(filters={"label": OWNER})
    history = next(runs.glob("signalled/*/history"))
    tables = list(history.glob("*.parquet"))
    assert not list(history.glob("*.jsonl")) and (
        phase == "cluster" or any(t.stem == "sends" for t in tables))
    for table in tables:
        pq.read_table(table)  # compacted whole: readable
