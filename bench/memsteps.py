"""`BENCH=memsteps`: one producer process's resident memory through windows where no broker answers,
beside the same process's calm minutes before them (the baseline): how far what such a window queues
raises a long run's memory."""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from contracts.scenario import ProducerSpec
from harness.broker_config import ClusterSpec
from harness.cluster import Cluster
from workloads.client_process import TRIM_S, ClientProcess
from workloads.producer import MAX_QUEUED
from workloads.sampler import rss

# every broker paused this long; at RATE the 40 s one fills MAX_QUEUED
WINDOWS_S = (10, 20, 30, 10, 40, 20)
RATE = 500  # sends a second, a scenario's default
# after each window (or calm step) before the sample: the backlog delivered, a trim since
SETTLE_S = 30.0


def _mib(process: ClientProcess) -> float:
    return rss([process.pid or 0]) / 2**20


def _steps(c: Cluster, process: ClientProcess) -> tuple[list[float], list[float]]:
    """The process's RSS after each calm step, then after each window."""
    calm = [_mib(process)]
    for _ in WINDOWS_S:
        time.sleep(SETTLE_S)
        calm.append(_mib(process))
    paused = [calm[-1]]
    for window in WINDOWS_S:
        for node in c.nodes:
            node.pause()
        time.sleep(window)
        for node in c.nodes:
            node.resume()
        time.sleep(SETTLE_S)
        paused.append(_mib(process))
    return calm, paused


def memsteps() -> list[str]:
    """The section: RSS samples of both phases, and each phase's growth."""
    with Cluster(ClusterSpec()) as c, tempfile.TemporaryDirectory() as tmp:
        c.metadata.create_topic("bench", 3, 3, {"min.insync.replicas": "2"})
        process = ClientProcess("producer", 0, ProducerSpec(rate=RATE), ("bench",), 3,
                                c.bootstrap_servers(), Path(tmp)).start()
        try:
            if not process.wait_ready(60):
                raise RuntimeError("the producer process did not start")
            time.sleep(SETTLE_S)  # its first sends and connections
            calm, paused = _steps(c, process)
        finally:
            process.stop()
            process.join()
    return _lines(calm, paused)


def _lines(calm: list[float], paused: list[float]) -> list[str]:
    def row(label: str, samples: list[float]) -> str:
        return (f"| {label} | {samples[0]:.1f} | {', '.join(f'{s:.1f}' for s in samples[1:])} | "
                f"{samples[-1] - samples[0]:+.1f} | {max(samples) - samples[0]:+.1f} |")

    grown = paused[-1] - paused[0]
    return ["## A producer's memory through unavailability windows", "",
            f"Measured {time.strftime('%Y-%m-%d')}.", "",
            "Command: `BENCH=memsteps make bench`. 3 brokers, topic of 3 partitions, RF 3; one "
            f"producer process as a run starts it, {RATE} sends/s, MAX_QUEUED {MAX_QUEUED:,}, its "
            f"free malloc memory returned every {TRIM_S:g} s. Its RSS is sampled {SETTLE_S:g} s "
            f"after each step: first {len(WINDOWS_S)} calm steps (the baseline), then "
            f"{len(WINDOWS_S)} windows of every broker paused for "
            f"{', '.join(str(w) for w in WINDOWS_S)} s.", "",
            "| phase | first (MiB) | after each step (MiB) | growth (MiB) | peak over first (MiB) "
            "|",
            "|---|---|---|---|---|", row("calm (baseline)", calm), row("windows", paused), "",
            f"Growth through the windows {grown:+.1f} MiB against {calm[-1] - calm[0]:+.1f} calm; "
            f"median of the windows' samples {statistics.median(paused[1:]):.1f} MiB."]
