"""A Spark standalone cluster from the pyspark package on 127.0.0.1: one master and N workers, for
the analysis's cluster path (`kchaos analyze --spark-master URL`)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pyspark
from tenacity import RetryError, Retrying, retry_if_result, stop_after_delay, wait_fixed

from bench import measure, synthetic
from harness.broker_config import free_port

SPARK_HOME = Path(pyspark.__file__).parent
READY_S = 90.0  # how long the master may take to count every worker alive
WORKERS, WORKER_MEMORY = 2, "4g"  # the benchmark's cluster: one core each, as this machine has two


def alive_workers(ui_port: int) -> int:
    """How many workers the master's web UI counts alive (0 while it does not answer)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=2) as r:
            return int(json.load(r).get("aliveworkers", 0))
    except (OSError, ValueError):
        return 0


def _daemon(directory: Path, name: str, args: list[str]) -> subprocess.Popen:
    """One Spark daemon (`spark-class CLASS ARGS`), its output in directory/NAME.log."""
    env = {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1",
           "SPARK_LOG_DIR": str(directory), "SPARK_WORKER_DIR": str(directory / "work")}
    with (directory / f"{name}.log").open("ab") as log:
        return subprocess.Popen([str(SPARK_HOME / "bin" / "spark-class"), *args], env=env,
                                stdout=log, stderr=subprocess.STDOUT)


def _tail(directory: Path, lines: int = 5) -> str:
    """The last lines of every daemon's log, for an error message."""
    return " | ".join(f"{p.stem}: "
                      + " / ".join(p.read_text(errors="replace").strip().splitlines()[-lines:])
                      for p in sorted(directory.glob("*.log")))


@contextlib.contextmanager
def standalone(directory: Path, workers: int = WORKERS) -> Iterator[str]:
    """A master and `workers` workers (one core and WORKER_MEMORY each) on 127.0.0.1; yields the
    master's URL once it counts every worker alive, and stops them all however the block ends."""
    directory.mkdir(parents=True, exist_ok=True)
    port, ui = free_port(), free_port()
    url = f"spark://127.0.0.1:{port}"
    daemons = [_daemon(directory, "master",
                       ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                             "--port", str(port), "--webui-port", str(ui)])]
    try:
        daemons += [_daemon(directory, f"worker-{i}",
                            ["org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1",
                             "--cores", "1", "--memory", WORKER_MEMORY, "--webui-port",
                             str(free_port())])
                    for i in range(workers)]
        try:
            Retrying(stop=stop_after_delay(READY_S), wait=wait_fixed(0.5),
                     retry=retry_if_result(lambda n: n < workers))(alive_workers, ui)
        except RetryError:
            raise RuntimeError(f"the Spark master at {url} counted {alive_workers(ui)} of "
                               f"{workers} "
                               f"workers alive after {READY_S:.0f} s; logs in {directory}: "
                               f"{_tail(directory)}") from None
        yield url
    finally:
        for d in reversed(daemons):
            d.terminate()
        for d in daemons:
            try:
                d.wait(30)
            except subprocess.TimeoutExpired:
                d.kill()


def results(history: Path, master: str | None, timeout_s: float = 7200) -> tuple[float, dict]:
    """The wall time of one analysis process (`bench.engines spark-results`) on `master` (None:
    local[*]) and what it found."""
    env = {"KCHAOS_SPARK_MASTER": master, "SPARK_EXECUTOR_MEMORY": WORKER_MEMORY} if master else {}
    secs, _, out = measure.run(["bench.engines", "spark-results", str(history)], timeout_s, env=env)
    try:
        return secs, json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise RuntimeError(f"the analysis on {master or 'local[*]'} failed: "
                           f"{out.strip()[-200:]}") from None


def differences(local: dict, remote: dict) -> list[str]:
    """What the cluster's results say differently: anomalies by name, metrics by key."""
    names = sorted(k for k in local["anomalies"].keys() | remote["anomalies"].keys()
                   if local["anomalies"].get(k) != remote["anomalies"].get(k))
    keys = sorted(k for k in local["metrics"].keys() | remote["metrics"].keys()
                  if local["metrics"].get(k) != remote["metrics"].get(k))
    return names + [f"metrics.{k}" for k in keys]


def section(sizes: list[int]) -> list[str]:
    """`BENCH=standalone`: each synthetic history analyzed in local mode (the baseline) and on a
    standalone cluster of WORKERS workers started from the pyspark package; every result must be
    identical."""
    rows, verdicts = [], []
    for n in sizes:
        with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMP")) as tmp:
            history = Path(tmp) / "history"
            synthetic.generate(n, history)
            local_s, local = results(history, None)
            with standalone(Path(tmp) / "spark") as url:
                remote_s, remote = results(history, url)
        differ = differences(local, remote)
        found = ", ".join(f"{k} {a['count']:,}" for k,
                          a in local["anomalies"].items() if a["count"])
        rows += [f"| {n:,} | local[*] (baseline) | {local_s:.1f} s | {found} |",
                 f"| {n:,} | standalone, {WORKERS} workers | {remote_s:.1f} s | "
                 f"{'identical' if not differ else 'DIFFERENT: ' + ', '.join(differ)} |"]
        verdicts.append(not differ)
    met = "met" if all(verdicts) else "NOT met"
    return ["## Analysis on a standalone Spark cluster", "",
            f"Measured {time.strftime('%Y-%m-%d')}.", "",
            "Command: `BENCH=standalone BENCH_SIZES=" + ",".join(f"{n:.0e}" for n in sizes)
            + " make bench`. The analysis section's synthetic histories, each analyzed by a fresh "
              "`python -m bench.engines spark-results` process in local mode (the baseline) and "
              "then on a standalone cluster started from the pyspark package on 127.0.0.1 (a "
              f"master and {WORKERS} workers of one core and {WORKER_MEMORY} each; the driver in "
              "the measured process, as `kchaos analyze --spark-master URL` runs it). Compared: "
              "every anomaly's count, its examples and the span of its sends, and every metric. "
              "Wall time is the driver process's, the cluster's start not included.", "",
            "| sends | Spark master | wall time | results |", "|---|---|---|---|", *rows, "",
            f"Identical results at every size run: {met}.", ""]
