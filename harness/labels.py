"""Docker labels that mark what kafka-chaos started, so `kchaos clean` can find it after a crash."""

from __future__ import annotations

import contextlib

import docker
import docker.errors

OWNER = "org.kafka-chaos"
RUN = "org.kafka-chaos.run"


def labels(run_id: str, kind: str) -> dict[str, str]:
    """Labels for a container or network of one run."""
    return {OWNER: kind, RUN: run_id}


def clean(run_id: str | None = None) -> tuple[int, int]:
    """Remove labelled containers (unpausing first) and networks; return how many of each."""
    client = docker.from_env()
    selector = f"{RUN}={run_id}" if run_id else OWNER
    containers = client.containers.list(all=True, filters={"label": selector})
    for c in containers:
        try:
            if c.status == "paused":
                c.unpause()
            c.remove(force=True, v=True)
        except docker.errors.NotFound:
            pass
    networks = client.networks.list(filters={"label": selector})
    for n in networks:
        with contextlib.suppress(docker.errors.NotFound):
            n.remove()
    return len(containers), len(networks)
