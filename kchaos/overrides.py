"""The command line's overrides of scenarios: --kafka VERSION[:MODE], --client, --seed(s) and
--duration, each re-validated so that errors still name the field."""

from __future__ import annotations

import json
import re

from contracts.clients import CLIENT, EXPECTED, java_release
from contracts.describe import shown
from contracts.errors import UsageError
from contracts.faultkinds import FAULT_KINDS
from contracts.fields import seconds
from contracts.scenario import Scenario
from contracts.versions import (
    METADATA_MODES,
    default_metadata,
    migration_problem,
    split_path,
    split_target,
    upgrade_problem,
)
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
    """A --kafka value: a version, or VERSION:MODE (3.9.2:zookeeper), either maybe with an upgrade
    path after it (`->4.4.0`, `->kraft`); the start's mode is None when not given (the scenario's,
    else the version's default)."""
    if token.endswith("-"):
        raise UsageError(f"Expected a whole upgrade path but got {field} {shown(token)}: the shell "
                         "took an unquoted '>' as a redirect; quote it, e.g. --kafka "
                         "'3.9.2->4.4.0'")
    version, mode = split_target(token)
    to = split_path(token)[1]
    if (mode and mode not in METADATA_MODES) or to == "":
        raise UsageError(f"Expected {field} VERSION, VERSION:kraft or VERSION:zookeeper (e.g. "
                         "3.9.2:zookeeper), or an upgrade path such as 3.9.2->4.4.0 or "
                         f"3.9.2:zookeeper->kraft, but got {field} {shown(token)}")
    jars.check_version(version, field)
    if to and to != "kraft":
        jars.check_version(to, f"{field} {split_path(token)[0]}->TO")
    return version, mode


def target_problem(s: Scenario, kafka: str) -> str | None:
    """Why a scenario cannot run on a --kafka target, or None. On a path `A->B` it needs an upgrade
    line (with `->kraft`, a migrate line), Kafka must support the path, and the scenario, its
    upgrade lines rolled to B, must run on A."""
    version, mode = split_target(kafka)
    to = split_path(kafka)[1]
    if to is None:
        return s.version_problem(version, mode)
    if to == "kraft" and not any(FAULT_KINDS[k].migrates for f in s.faults
                                 for k in f.fired_kinds()):
        return f"the path {kafka} needs a line that migrates the cluster, and it has none"
    if to != "kraft" and not any(f.to for f in s.faults):
        return f"the path {kafka} needs an upgrade line (one with `to:`), and it has none"
    start_mode = mode or s.kafka.metadata or default_metadata(version)
    if problem := (migration_problem(version, start_mode, f"--kafka {kafka}") if to == "kraft"
                   else upgrade_problem(version, start_mode, to, f"--kafka {version}->TO")):
        return problem
    rolled = [f.model_copy(update={"to": to}) if f.to else f for f in s.faults]
    return s.model_copy(update={"faults": rolled}).version_problem(version, mode)


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
    """Apply --kafka (VERSION[:MODE], or a path A->B: every upgrade line's `to` is B), --seed,
    --duration and --client (every role the workload runs), re-validating so errors still name the
    field."""
    version, metadata = kafka_target(kafka) if kafka else (None, None)
    to = split_path(kafka)[1] if kafka else None
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
        for line in raw["faults"] if to and to != "kraft" else ():
            if line.get("to"):
                line["to"] = to
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
