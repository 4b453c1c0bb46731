"""The cluster path is real: a Spark standalone master and worker on 127.0.0.1 give the local-mode results."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pyspark
import pytest

from tests.histories import clean

SPARK_HOME = Path(pyspark.__file__).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def standalone(tmp_path):
    env = {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1",
           "SPARK_LOG_DIR": str(tmp_path), "SPARK_WORKER_DIR": str(tmp_path / "work")}
    port = free_port()
    cls = str(SPARK_HOME / "bin" / "spark-class")
    master = subprocess.Popen([cls, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port",
                               str(port), "--webui-port", str(free_port())], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    url = f"spark://127.0.0.1:{port}"
    worker = subprocess.Popen([cls, "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1",
                               "--cores", "1", "--memory", "1g", "--webui-port", str(free_port())], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(8)
    yield url
    for p in (worker, master):
        p.terminate()
        p.wait(30)


ANALYZE = """
import json, sys
from pathlib import Path
from reports.analysis import analyze
from reports.spark import session
s = session(sys.argv[2] if len(sys.argv) > 2 else None, driver_memory="1g")
print(json.dumps({"master": s.sparkContext.master, "counts": analyze(s, Path(sys.argv[1])).counts()}))
"""


def analyze_in(history: Path, master: str | None) -> dict:
    args = [sys.executable, "-c", ANALYZE, str(history), *([master] if master else [])]
    done = subprocess.run(args, capture_output=True, text=True, timeout=600, env={**os.environ,
                                                                                  "PYSPARK_PYTHON": sys.executable})
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_standalone_cluster_gives_the_local_results(standalone, tmp_path):
    h = clean().drop("reads", producer=0, seq=0).drop("replicas", producer=0, seq=0)
    h.read("drain", 1, 6, 0, 1)  # and a duplicate
    history = h.write(tmp_path / "history")
    local = analyze_in(history, None)
    remote = analyze_in(history, standalone)
    assert remote["master"] == standalone and local["master"].startswith("local")
    assert remote["counts"] == local["counts"]
    assert local["counts"]["lost-write"] == 1 and local["counts"]["duplicate"] == 1
