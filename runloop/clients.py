"""The workload's client processes as the run loop handles them: started in order, waited for,
restarted after a hung call, and stopped."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from contracts.clients import java_release
from contracts.history import Event, HistoryWriter
from contracts.scenario import Scenario, copier_id, transactional_id
from faults.ports import Clients
from harness import jars
from workloads.client_process import ClientProcess
from workloads.java_client import JavaClientProcess, java_sources
from workloads.worker import Worker

CLIENT_START_S = 60.0
CATCH_UP_S = 2.0  # how long live consumers read the healed log before they stop
INTERRUPTED_WAIT_S = 5.0  # how long an interrupted run waits for a client or a fault op to end


def everyone(clients: Clients) -> tuple[ClientProcess, ...]:
    """Every client process of the run."""
    return (*clients.producers, *clients.copiers, *clients.consumers)


def require_ready(processes: list[ClientProcess], not_ready: str,
                  before_raising: Callable[[], object] | None = None) -> None:
    """Wait up to CLIENT_START_S for each client process to report ready; raise naming those that
    did not."""
    late = [c.cid for c in processes if not c.wait_ready(CLIENT_START_S)]
    if late:
        if before_raising:
            before_raising()
        raise RuntimeError(f"{processes[0].kind}s {late} {not_ready} within {CLIENT_START_S:.0f} s")


def start(scenario: Scenario, boot: str, history: HistoryWriter) -> Clients:
    """Start the workload's client processes: consumers (share consumers with `workload: share`),
    copiers (eos-copy), producers (with `consumer.reset: latest`, once every consumer has its first
    assignment)."""
    topics, parts, copying = (scenario.topics(), scenario.topic.partitions,
                              scenario.workload == "eos-copy")

    def spawn(kind, spec, n: int) -> list[ClientProcess | JavaClientProcess]:
        if java := java_release(spec.client, scenario.kafka.version):
            path = jars.worker_classpath(java, java_sources(java))
            return [JavaClientProcess(kind, i, spec, topics, parts, boot, history.dir,
                                      path).start() for i in range(n)]
        return [ClientProcess(kind, i, spec, topics, parts, boot, history.dir).start()
                for i in range(n)]
    if scenario.workload == "share":
        consumers, group = (spawn("share", scenario.share, scenario.share.count),
                            scenario.share.group)
    else:
        consumers, group = (spawn("consumer", scenario.consumer, scenario.consumer.count),
                            scenario.consumer.group)
        # a member starting at the end would skip what came before it joined
        if scenario.consumer.reset == "latest":
            require_ready(consumers, "had no assignment", lambda: [c.kill() for c in consumers])
    copiers = spawn("copier", scenario.copier, scenario.copier.count if copying else 0)
    return Clients(consumers, spawn("producer", scenario.producer, scenario.producer.count),
                   copiers, scenario.copier.group if copying else group,
                   copier_id(0) if copying else transactional_id(0))


def restart(c: ClientProcess, history: HistoryWriter, why: str) -> None:
    """Replace a client process with a new incarnation (killing one still running), and say why in
    a `recreated` event."""
    c.kill()
    c.start()
    history.event(c.name, Event.RECREATED, detail=why)


def restart_hung(clients: Clients, history: HistoryWriter) -> bool:
    """Restart the client processes that ended themselves on a hung call, as an application's
    supervisor would; True if any was."""
    hung = [c for c in everyone(clients) if c.hung]
    for c in hung:
        restart(c, history, "its process was restarted after a hung call")
    return bool(hung)


def stop(processes: Sequence[ClientProcess | Worker], wait_s: float | None = None) -> None:
    """Ask each client process or sampler to stop, then wait for each (`wait_s` at most, each)."""
    for c in processes:
        c.stop()
    for c in processes:
        c.join(wait_s)


def stop_consumers(consumers: list[ClientProcess]) -> None:
    """Let live consumers catch up to the healed log, then stop them: each commits and leaves its
    group."""
    time.sleep(CATCH_UP_S)
    stop(consumers, 30)
