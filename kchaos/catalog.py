"""Scenarios as users write them: YAML files and the built-in catalog, validated (with the fault and anomaly
vocabularies) and expanded into one Scenario per matrix combination before anything runs."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from contracts.errors import UsageError
from contracts.scenario import FaultSpec, Scenario, Vocabulary, describe_error, seconds
from faults.registry import KINDS
from harness import images
from reports.checkers import ANOMALIES

VOCABULARY = Vocabulary(KINDS, ANOMALIES)
CATALOG = Path(__file__).resolve().parents[1] / "scenarios"


def validate(raw: dict, where: str) -> Scenario:
    """Validate one scenario dict; raise UsageError listing every problem, one per line."""
    try:
        return Scenario.model_validate(raw, context=VOCABULARY.context())
    except ValidationError as exc:
        raise UsageError("\n".join(describe_error(e, where) for e in exc.errors())) from None


def fault_spec(**fields: Any) -> FaultSpec:
    """One fault line, validated like a scenario's (`for` may be given as `for_`)."""
    if "for_" in fields:
        fields["for"] = fields.pop("for_")
    return FaultSpec.model_validate(fields, context=VOCABULARY.context())


def from_json(text: str) -> Scenario:
    """A scenario.json a run wrote."""
    return Scenario.model_validate_json(text, context=VOCABULARY.context())


def _set(raw: dict, dotted: str, value: Any) -> None:
    """Set `a.b.0.c` in nested dicts and lists."""
    parts = dotted.split(".")
    node: Any = raw
    for p in parts[:-1]:
        if isinstance(node, list) and p.isdigit() and int(p) < len(node):
            node = node[int(p)]
        elif isinstance(node, dict):
            node = node.setdefault(p, {})
        else:
            raise UsageError(f"matrix key {dotted!r}: {p!r} is not a section or a list index")
    if isinstance(node, list) and parts[-1].isdigit() and int(parts[-1]) < len(node):
        node[int(parts[-1])] = value
    elif isinstance(node, dict):
        node[parts[-1]] = value
    else:
        raise UsageError(f"matrix key {dotted!r}: cannot set {parts[-1]!r}")


def expand(raw: dict, where: str) -> list[Scenario]:
    """Expand `matrix:` into one validated scenario per combination (all validated before any runs)."""
    raw = dict(raw)
    matrix = raw.pop("matrix", None) or {}
    if not isinstance(matrix, dict) or any(not isinstance(v, list) or not v for v in matrix.values()):
        raise UsageError(f"{where}: matrix must map dotted field paths to non-empty lists")
    if not matrix:
        return [validate(raw, where)]
    out = []
    keys = list(matrix)
    for combo in itertools.product(*(matrix[k] for k in keys)):
        variant = yaml.safe_load(yaml.safe_dump(raw))
        for k, v in zip(keys, combo, strict=True):
            _set(variant, k, v)
        tag = ",".join(f"{k.split('.')[-1]}={v}" for k, v in zip(keys, combo, strict=True))
        variant["name"] = f"{raw.get('name', 'scenario')}[{tag}]"
        out.append(validate(variant, f"{where} (matrix {tag})"))
    return out


def load(path: Path) -> list[Scenario]:
    """Read a YAML scenario file; every error is a UsageError with one clear message."""
    if not path.exists():
        raise UsageError(f"No scenario file at {path}")
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise UsageError(f"{path}: not valid YAML{at}: {getattr(exc, 'problem', exc)}") from None
    if not isinstance(raw, dict):
        raise UsageError(f"{path}: expected a mapping with at least a 'name' field")
    return expand(raw, str(path))


def catalog() -> dict[str, Path]:
    """Built-in scenarios by name."""
    return {p.stem: p for p in sorted(CATALOG.glob("*.yaml")) if p.name != "suites.yaml"}


def suite_files(suite: str) -> list[Path]:
    """The scenario files of a built-in suite (suites.yaml)."""
    suites = yaml.safe_load((CATALOG / "suites.yaml").read_text())
    if suite not in suites:
        raise UsageError(f"Expected one of {', '.join(map(repr, suites))} but got suite={suite!r}")
    names = suites[suite]
    if names == "all":
        return list(catalog().values())
    missing = [n for n in names if n not in catalog()]
    if missing:
        raise UsageError(f"suites.yaml: suite {suite!r} names unknown scenarios {missing}")
    return [catalog()[n] for n in names]


def resolve_scenario(arg: str) -> Path:
    """A path, or the name of a built-in scenario."""
    p = Path(arg)
    if p.exists() or p.suffix in (".yaml", ".yml"):
        return p
    if arg in catalog():
        return catalog()[arg]
    raise UsageError(f"No scenario file {arg!r} and no built-in scenario of that name "
                     f"(built-in: {', '.join(catalog())})")


def override(scenarios: list[Scenario], kafka: str | None, seed: int | None, duration: str | None) -> list[Scenario]:
    """Apply --kafka/--seed/--duration, re-validating so errors still name the field."""
    if kafka:
        images.check_version(kafka)
    out = []
    for s in scenarios:
        raw = json.loads(s.model_dump_json(by_alias=True))
        if kafka:
            raw["kafka"]["version"] = kafka
        if seed is not None:
            raw["seed"] = seed
        if duration:
            raw["duration"] = seconds(duration)
        out.extend(expand(raw, f"{s.name} (with command-line overrides)"))
    return out


def with_seeds(scenarios: list[Scenario], seeds: int, first: int | None = None) -> list[Scenario]:
    """Each scenario with its own seed (or `first`) and the next `seeds - 1` ones."""
    return [s for base in scenarios for i in range(seeds)
            for s in override([base], None, (base.seed if first is None else first) + i, None)]
