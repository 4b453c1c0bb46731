"""Docker labels that mark what kafka-chaos started, so `kchaos clean` can find it after a crash."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import time
from pathlib import Path

import docker
import docker.errors

from harness import freezer, remote_tier

OWNER = "org.kafka-chaos"
RUN = "org.kafka-chaos.run"
GONE_WITHIN_S = 60
SCRATCH = "kchaos-scratch-"  # a run's directory on this host, under the temporary directory


def labels(run_id: str, kind: str) -> dict[str, str]:
    """Labels for a container or network of one run."""
    return {OWNER: kind, RUN: run_id}


def scratch(run_id: str) -> Path:
    """Where a run keeps files on this host while it works (the replicas' segment copies)."""
    return Path(tempfile.gettempdir()) / f"{SCRATCH}{run_id}"


def clean_scratch(run_id: str | None = None) -> None:
    """Remove one run's scratch directory on this host, or every run's."""
    for d in Path(tempfile.gettempdir()).glob(f"{SCRATCH}{run_id or '*'}"):
        shutil.rmtree(d, ignore_errors=True)


def labelled(client: docker.DockerClient, selector: str = OWNER) -> list:
    """The containers whose labels match `selector`, skipping one removed between docker's list and
    its inspect (a watchdog or a teardown may be removing them)."""
    return client.containers.list(all=True, ignore_removed=True, filters={"label": selector})


def clean(run_id: str | None = None) -> tuple[int, int]:
    """Remove labelled containers (thawed from the host first, so an engine stuck on a frozen one
    gets going again), networks, scratch directories and remote tiers; return how many containers
    and networks."""
    clean_scratch(run_id)
    remote_tier.release_run(run_id)
    client = docker.from_env()
    selector = f"{RUN}={run_id}" if run_id else OWNER
    containers = labelled(client, selector)
    for c in containers:
        try:
            freezer.thaw(c.id)  # a forced removal kills a paused container too
            c.remove(force=True, v=True)
        except docker.errors.APIError as exc:
            # gone already, or a teardown still under way removes it
            if exc.status_code not in (404, 409):
                raise
    # a network with a container attached cannot be removed
    deadline = time.monotonic() + GONE_WITHIN_S
    while labelled(client, selector) and time.monotonic() < deadline:
        time.sleep(0.5)
    networks = client.networks.list(filters={"label": selector})
    for n in networks:
        with contextlib.suppress(docker.errors.NotFound):
            n.remove()
    return len(containers), len(networks)
