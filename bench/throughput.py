"""`BENCH=throughput`: the workload's producers with full history recording vs Kafka's
ProducerPerformance, on one cluster, each side warmed up first."""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from contracts.scenario import ProducerSpec
from contracts.versions import DEFAULT_VERSION
from harness import jars
from harness.broker_config import ClusterSpec
from harness.cluster import Cluster
from workloads.client_process import ClientProcess
from workloads.java_client import JVM, JavaClientProcess, java_sources

REPEAT = int(os.environ.get("BENCH_REPEAT", "3"))
JAVA = "java"  # the side of two producers on the Java worker
HOST = "host"  # ProducerPerformance on this host, reaching the brokers the way the clients do


PERF = re.compile(r"([\d.]+) records/sec")
# Unmeasured rounds of every side before the measured ones, until ProducerPerformance's rate moved
# by less than WARM_SETTLED from the round before: the brokers' JIT takes minutes of full load to
# settle.
WARM_ROUNDS = (2, 6)  # at least, at most
WARM_SETTLED = 0.1


def throughput(seconds: float = 15.0, payload: int = 64, records: int = 3_000_000) -> list[str]:
    """The workload's producers, each in a process of its own as the runner runs them, with full
    history recording vs Kafka's ProducerPerformance: same cluster, acks, payload and linger.
    Brokers run faster once their JIT has warmed up, so every side first runs unmeasured until
    ProducerPerformance's rate settles, and each round rotates which side goes first."""
    sides = {"theirs": [], HOST: [], 1: [], 2: [], JAVA: []}
    java_classpath = jars.worker_classpath(DEFAULT_VERSION, java_sources(DEFAULT_VERSION))
    with Cluster(ClusterSpec()) as c, tempfile.TemporaryDirectory() as tmp:
        c.metadata.create_topic("bench", 3, 3, {"min.insync.replicas": "2"})
        spec = ProducerSpec(rate=0, payload_bytes=payload, linger_ms=5)

        def run_ours(side, i: int) -> float:
            n, where = (2 if side == JAVA else side), Path(tmp) / f"{side}-{i}"
            ps = [(JavaClientProcess("producer", k, spec, ("bench",), 3, c.bootstrap_servers(),
                                     where, java_classpath) if side == JAVA else
                   ClientProcess("producer", k, spec, ("bench",), 3, c.bootstrap_servers(), where))
                  .start() for k in range(n)]
            if not all(p.wait_ready(60) for p in ps) or not first_ack(ps, 60):
                raise RuntimeError("a producer process did not start")
            before = sum(p.acked for p in ps)
            time.sleep(seconds)
            rate = (sum(p.acked for p in ps) - before) / seconds
            for p in ps:
                p.stop()
            for p in ps:
                p.join()
            return rate

        def run(side, i: int) -> float:
            if side == HOST:
                return host_producer_performance(c.bootstrap_servers(), records, payload)
            return producer_performance(c, records, payload) if side == "theirs" else run_ours(
                side, i)

        order = list(sides)
        warm: dict = {side: [] for side in order}  # not measured
        while len(warm["theirs"]) < WARM_ROUNDS[1] and not settled(warm["theirs"], WARM_ROUNDS[0]):
            for side in order:
                warm[side].append(run(side, -1 - len(warm[side])))
        for i in range(REPEAT):
            for side in order[i % len(order):] + order[:i % len(order)]:
                sides[side].append(run(side, i))
    return _throughput_lines(sides, warm, seconds, payload, records)


def first_ack(processes: list, timeout: float) -> bool:
    """Wait until the processes' first send is acknowledged (the count starts there, as
    ProducerPerformance's starts at its first send, after its own start-up); False if none was."""
    deadline = time.monotonic() + timeout
    while sum(p.acked for p in processes) == 0:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _perf_args(records: int, payload: int, bootstrap: str) -> str:
    return (f"org.apache.kafka.tools.ProducerPerformance --topic bench --num-records {records} "
            f"--record-size {payload} --throughput -1 --producer-props bootstrap.servers="
            f"{bootstrap} acks=all linger.ms=5 enable.idempotence=true")


def _rate(code: int, out: str) -> float:
    found = PERF.findall(out)
    return float(found[-1]) if code == 0 and found else float("nan")


def producer_performance(c: Cluster, records: int, payload: int) -> float:
    """Kafka's ProducerPerformance in broker 1's container: records/s of `records` sends, acks=all,
    idempotent."""
    return _rate(*c.node(1).sh(
        "java -Xmx512m -cp '/opt/kafka/libs/*' "
        "-Dlog4j2.configurationFile=/etc/kafka/log4j2.properties "
        + _perf_args(records, payload, "kafka-1:9092")))


def host_producer_performance(bootstrap: str, records: int, payload: int) -> float:
    """ProducerPerformance on this host, with the Java worker's JVM settings, through the published
    ports and Docker's port proxy as every workload client."""
    libs = jars.fetch_jars(DEFAULT_VERSION)
    done = subprocess.run(["java", *JVM, "-cp", f"{libs}/*",
                           *_perf_args(records, payload, bootstrap).split()],
                          capture_output=True, text=True, timeout=600)
    return _rate(done.returncode, done.stdout)


def warm_rates(c: Cluster, records: int, payload: int) -> list[float]:
    """ProducerPerformance warmed up until its rate settles, then REPEAT rounds."""
    warm: list[float] = []
    while len(warm) < WARM_ROUNDS[1] and not settled(warm, WARM_ROUNDS[0]):
        warm.append(producer_performance(c, records, payload))
    return [producer_performance(c, records, payload) for _ in range(REPEAT)]


def _throughput_lines(sides: dict, warm: dict, seconds: float, payload: int,
                      records: int) -> list[str]:
    """The throughput section: medians, every round, and the ratios against ProducerPerformance."""
    med = {side: statistics.median(v) for side, v in sides.items()}

    def row(label: str, side) -> str:
        return (f"| {label} | {med[side]:,.0f} | {', '.join(f'{x:,.0f}' for x in sides[side])} | "
                f"{', '.join(f'{x:,.0f}' for x in warm[side])} |")

    def ratio(n: int, target: float) -> str:
        r = med[n] / med["theirs"]
        return f"{r:.3f}x (target >= {target}x: {'met' if r >= target else 'NOT met'})"

    return ["## Workload throughput with full history vs ProducerPerformance", "",
            f"Measured {time.strftime('%Y-%m-%d')}.", "",
            "Command: `BENCH=throughput make bench`. 3 brokers, topic of 3 partitions, RF 3, "
            f"acks=all, idempotence on, {payload}-byte values, linger.ms=5. Ours: the "
            "workload's producers as a run starts them (one process each), every send "
            f"recorded to the history, counted over {seconds:.0f} s from the first "
            "acknowledgement; ProducerPerformance "
            f"({records:,} records) runs in broker 1's container on the same cluster. After "
            f"{len(warm['theirs'])} unmeasured warm-up rounds of every side (the brokers' JIT; "
            f"until ProducerPerformance's rate moved by under {WARM_SETTLED:.0%}), {REPEAT} "
            "rounds, rotating which side goes first.", "",
            "| producer | median records/s | runs | warm-up rounds (not counted) |",
            "|---|---|---|---|",
            row("Kafka ProducerPerformance, 1 process (baseline)", "theirs"),
            row("Kafka ProducerPerformance on this host, through the published ports (context)",
                HOST),
            row("kafka-chaos, 1 producer + history", 1),
            row("kafka-chaos, 2 producers + history (a scenario's default)", 2),
            row("kafka-chaos, 2 producers on the Java worker (`client: java`) + history", JAVA), "",
            f"Ratio, 1 producer: {ratio(1, 0.8)}. Ratio, 2 producers: {ratio(2, 0.85)}. "
            f"Ratio, java client, 2 producers: {ratio(JAVA, 0.95)}. All of it shares this "
            "machine's 2 cores with the 3 brokers. The host's ProducerPerformance takes the "
            "workload's path (Docker's port proxy, the Java worker's JVM settings): "
            f"{med[HOST] / med['theirs']:.3f}x of the baseline, and the Java worker "
            f"{med[JAVA] / med[HOST]:.3f}x of it.", ""]


def settled(rates: list[float], at_least: int) -> bool:
    """True once there were `at_least` rounds and the last rate is within WARM_SETTLED of the one
    before."""
    return len(rates) >= at_least and abs(rates[-1] - rates[-2]) <= WARM_SETTLED * rates[-2]


# from this size one run per engine: what counts there is whether it completes
