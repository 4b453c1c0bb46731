"""The command line's overrides of scenarios: --kafka VERSION[:MODE], --client, --seed(s) and
--duration, each re-validated so that errors still name the field."""

from __future__ import annotations

import json
import re

from contracts.clients import CLIENT, EXPECTED, java_release
from contracts.describe import shown
from contracts.errors import UsageError
from contracts.fields import seconds
from contracts.scenario import Scenario
from contracts.versions import METADATA_MODES, split_target
from harness import jars
from kchaos.catalog import expand


def duration_option(value: str | None) -> float | None:
    """--duration as seconds, or one clear error naming the option."""
    if value is None:
        return None
    try:
        s = seconds(value)
    except ValueError:
        s = -1.0
    if not 1 <= s <= 7 * 86400:
        raise UsageError("Expected a duration like '90s', '5m' or '2h' (1 s to 7 days) but got "
                         f"--duration {value!r}")
    return s


def kafka_target(token: str, field: str = "--kafka") -> tuple[str, str | None]:
    """A --kafka value: a version, or VERSION:MODE (3.9.2:zookeeper); the mode is None when not
    given (the scenario's, else the version's default)."""
    version, mode = split_target(token)
    if mode and mode not in METADATA_MODES:
        raise UsageError(f"Expected {field} VERSION, VERSION:kraft or VERSION:zookeeper (e.g. "
                         f"3.9.2:zookeeper) but got {field} {token!r}")
    jars.check_version(version, field)
    return version, mode


def client_option(client: str | None) -> str | None:
    """A --client value: 'librdkafka', 'java' or 'java:X.Y.Z' (on Maven Central)."""
    if client is None:
        return None
    if not CLIENT.match(client):
        raise UsageError(f"Expected {EXPECTED} but got --client {shown(client)}")
    if java := java_release(client, ""):
        jars.check_client_version(java, f"--client {client}")
    return client


def override(scenarios: list[Scenario], kafka: str | None, seed: int | None,
             duration: str | None, client: str | None = None) -> list[Scenario]:
    """Apply --kafka (VERSION[:MODE])/--seed/--duration/--client (every role the workload runs),
    re-validating so errors still name the field."""
    version, metadata = kafka_target(kafka) if kafka else (None, None)
    length, client = duration_option(duration), client_option(client)
    out: list[Scenario] = []
    for s in scenarios:
        raw = json.loads(s.model_dump_json(by_alias=True))
        for role in s.roles() if client else ():
            raw[role]["client"] = client
        if version:
            raw["kafka"]["version"] = version
            raw["kafka"]["metadata"] = metadata or raw["kafka"]["metadata"]
            raw["name"] = re.sub(r"\bversion=[^,\]]+", f"version={version}", raw["name"])
        if seed is not None:
            raw["seed"] = seed
        if length is not None:
            raw["duration"] = length
        if any(o.name == raw["name"] and o.seed == raw["seed"] for o in out):
            continue  # a matrix over versions is one scenario on one version
        out.extend(expand(raw, f"{s.name} (with command-line overrides)"))
    return out


def with_seeds(scenarios: list[Scenario], seeds: int, first: int | None = None) -> list[Scenario]:
    """Each scenario with its own seed (or `first`) and the next `seeds - 1` ones."""
    return [s for base in scenarios for i in range(seeds)
            for s in override([base], None, (base.seed if first is None else first) + i, None)]
