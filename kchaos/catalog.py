"""Scenarios as users write them: YAML files and the built-in catalog, validated (with the fault and
anomaly vocabularies) and expanded into one Scenario per matrix combination before anything runs."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from contracts.clients import java_release
from contracts.describe import closest, describe_error, shown
from contracts.errors import UsageError
from contracts.faultkinds import FAULT_KINDS, FaultKind
from contracts.faultlines import MIX
from contracts.measured import restart_seconds
from contracts.scenario import FaultSpec, Scenario
from faults.plan import line_starts, op_spec, plan
from harness import jars

PREFIXED = ("listener.name.",)  # broker configs Kafka accepts per listener, under a listener's name
CATALOG = Path(__file__).resolve().parents[1] / "scenarios"


def validate(raw: dict, where: str, environment: bool = True) -> Scenario:
    """Validate one scenario dict: the model, then (with `environment`) what this machine can run of
    it. Raise UsageError listing every problem, one per line."""
    try:
        scenario = Scenario.model_validate(raw)
    except ValidationError as exc:
        raise UsageError("\n".join(describe_error(e, where) for e in exc.errors())) from None
    if environment:
        preflight(scenario, where)
    return scenario


def preflight(scenario: Scenario, where: str) -> None:
    """The environment's part of validation: the version (and a tiered topic's plugin) on Maven
    Central or cached here, before anything that needs its jars; config names its jars define
    (fetched once); fault lines paced for the broker restarts measured here."""
    jars.check_version(scenario.kafka.version, f"{where}: kafka.version",
                       tiered=scenario.topic.remote_storage)
    for i, f in enumerate(scenario.faults):
        if f.to is not None:
            jars.check_version(f.to, f"{where}: faults.{i}.to")
    for role, spec in scenario.roles().items():
        if java := java_release(spec.client, scenario.kafka.version):
            jars.check_client_version(java, f"{where}: {role}.client={spec.client!r}")
    problems = [f"{where}: {problem}"
                for problem in (*pace_problems(scenario), *config_problems(scenario))]
    if problems:
        raise UsageError("\n".join(problems))


def config_problems(s: Scenario) -> list[str]:
    """Broker and topic config keys the scenario's Kafka version does not define (checked against
    the version's own config names; nothing to fetch when the scenario sets none)."""
    if not s.kafka.config and not s.topic.config and not s.kafka.broker_overrides:
        return []
    names = jars.config_names(s.kafka.version)
    out = []
    given_where = [("kafka.config", s.kafka.config, names.broker),
                   ("topic.config", s.topic.config, names.topic),
                   *((f"kafka.broker_overrides.{b}", cfg, names.broker) for b,
                     cfg in s.kafka.broker_overrides.items())]
    for field, given, known in given_where:
        for key in given:
            if key not in known and not key.startswith(PREFIXED):
                close = closest(key, sorted(known), cutoff=0.7)
                hint = f"; did you mean {close!r}?" if close else ""
                out.append(f"Unknown config {field}.{key!r}: Kafka {s.kafka.version} defines no "
                           f"such {field.split('.')[0].replace('kafka', 'broker')} config{hint}")
    return out


AFTER = {"kill": "after a kill", "clean": "after a clean stop"}


def pace_problems(s: Scenario) -> list[str]:
    """Fault lines whose ops (each busy for its hold and the broker restarts it waits for) fall so
    far behind `every` that planned ops would not fire before the run ends. A line that only drifts
    late runs: its rows say when."""
    out = [] if all(f.fault != MIX for f in s.faults) else _mix_pace(s)
    for i, f in enumerate(s.faults):
        if f.fault == MIX:
            continue
        busy, kind, restart, seen = _busy(FAULT_KINDS[f.fault], f.for_, s)
        planned, missed = _unreached(f, busy, s.duration)
        if missed:
            how = "measured here" if seen else "assumed: none measured here yet"
            out.append(f"faults.{i}: {f.fault} keeps its line busy about {busy:.0f} s "
                       f"(for={f.for_:g} s and broker restarts of {restart:g} s "
                       f"{AFTER[kind.restart_after]}, {how}, Kafka {s.kafka.version} "
                       f"{s.kafka.mode}), longer than every={f.every:g} s minus jitter, so "
                       f"{missed} "
                       f"of its {planned} ops would not fire before the run ends; use every >= "
                       f"{math.ceil(busy + f.jitter) + 1} s")
    return out


def _mix_pace(s: Scenario) -> list[str]:
    """A mix line whose ops, each busy as long as the kind the seed drew for it, would leave planned
    ops unfired."""
    out, planned, busy = [], plan(s.faults, s.duration, s.seed), _busy_s(s)
    for i, f in enumerate(s.faults):
        if f.fault != MIX:
            continue
        ops, start, missed = [o for o in planned if o.index == i], -math.inf, 0
        for op in ops:
            start = max(op.at, start + busy(op.fault, f.for_))
            missed += start + min(f.for_, s.duration) > s.duration
        if missed:
            out.append(f"faults.{i}: the kinds this mix drew for seed {s.seed} keep its line busy "
                       f"longer than every={f.every:g} s, so {missed} of its {len(ops)} ops would "
                       "not fire before the run ends; raise every or drop the slowest kinds")
    return out


def _busy_s(s: Scenario) -> Callable[[str, float], float]:
    """How long an op of a kind and hold keeps its line busy in this scenario, each figure read from
    this machine's measured restarts once, not once per op."""
    known: dict[tuple[str, float], float] = {}

    def busy(kind: str, hold: float) -> float:
        if (kind, hold) not in known:
            known[kind, hold] = _busy(FAULT_KINDS[kind], hold, s)[0]
        return known[kind, hold]
    return busy


def _busy(kind: FaultKind, hold: float, s: Scenario) -> tuple[float, FaultKind, float, bool]:
    """(how long one op of `kind` keeps its line busy, the kind, the broker restart it plans with,
    whether measured)."""
    restart, seen = restart_seconds(s.kafka.version, s.kafka.mode, kind.restart_after)
    return kind.busy_s(hold, s.kafka.brokers, restart), kind, restart, seen


def contention(s: Scenario) -> list[str]:
    """Warnings for fault lines whose planned ops will often find their brokers held by another
    line's op, and be skipped: each op counts the chance that an op of another line, busy at its
    planned moment, holds a broker it picks."""
    busy = _busy_s(s)
    ops = [(o, spec, o.at + busy(o.fault, spec.for_)) for o in plan(s.faults, s.duration, s.seed)
           if FAULT_KINDS[o.fault].aims in ("brokers", "itself")
           for spec in [op_spec(s.faults[o.index], o)]]
    skipped: dict[tuple[int, int], float] = {}
    for op, spec, _ in ops:
        if FAULT_KINDS[op.fault].claims == "each":  # it waits for a held broker, never skipped
            continue
        for other, held, until in ops:
            if other.index != op.index and other.at <= op.at < until:
                key = (op.index, other.index)
                skipped[key] = skipped.get(key, 0.0) + _meet(spec, held, s)
    planned = Counter(o.index for o, _, _ in ops)
    return [f"faults.{i}: about {n:.0f} of its {planned[i]} {s.faults[i].fault} ops would find "
            f"their brokers held by faults.{j} ({s.faults[j].fault}) and be skipped; space the "
            "lines out or aim them apart"
            for (i, j), n in sorted(skipped.items()) if n >= 1]


# targets that never share a broker at one moment
DISJOINT = ({"leader", "followers"}, {"isr", "non-isr"})


def _meet(f: FaultSpec, g: FaultSpec, s: Scenario) -> float:
    """The chance that two ops pick at least one broker in common."""
    n = s.kafka.brokers
    if "zookeeper" in (f.target, g.target):  # a node apart from the brokers
        return float(f.target == g.target)
    if isinstance(f.target, list) and isinstance(g.target, list):
        return float(bool(set(f.target) & set(g.target)))
    if {str(f.target), str(g.target)} in DISJOINT:
        return 0.0
    a, b = _size(f, s), _size(g, s)
    return 1.0 - math.comb(n - a, b) / math.comb(n, b) if a + b <= n else 1.0


def _size(f: FaultSpec, s: Scenario) -> int:
    """How many brokers a line's op holds."""
    n, rf = s.kafka.brokers, min(s.topic.replication_factor, s.kafka.brokers)
    kind = FAULT_KINDS[f.fault]
    if kind.aims == "itself":  # all its brokers at once, or one at a time
        return n if kind.claims == "all" else 1
    if f.target == "all":
        return n
    sizes = {"majority": n // 2 + 1, "minority": max(1, (n - 1) // 2), "followers": rf - 1,
             "isr": rf, "non-isr": max(1, n - rf)}
    return len(f.target) if isinstance(f.target, list) else sizes.get(str(f.target), 1)


def _unreached(f: FaultSpec, busy: float, duration: float) -> tuple[int, int]:
    """(planned, missed): a line's ops at their densest (every - jitter apart), each starting once
    the one before is done, and how many of them would start too late to hold before `duration`."""
    hold, start, missed = min(f.for_, duration), -math.inf, 0
    planned = list(line_starts(f, duration, lambda: f.every - f.jitter))
    for at in planned:
        start = max(at, start + busy)
        missed += start + hold > duration
    return len(planned), missed


def fault_spec(**fields: Any) -> FaultSpec:
    """One fault line, validated like a scenario's (`for` may be given as `for_`)."""
    if "for_" in fields:
        fields["for"] = fields.pop("for_")
    return FaultSpec.model_validate(fields)


def from_json(text: str) -> Scenario:
    """A scenario.json a run wrote."""
    return Scenario.model_validate_json(text)


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


def expand(raw: dict, where: str, environment: bool = True) -> list[Scenario]:
    """Expand `matrix:` into one validated scenario per combination (all validated before any
    runs)."""
    raw = dict(raw)
    matrix = raw.pop("matrix", None) or {}
    if not isinstance(matrix,
                      dict) or any(not isinstance(v, list) or not v for v in matrix.values()):
        raise UsageError(f"{where}: matrix must map dotted field paths to non-empty lists")
    if not matrix:
        return [validate(raw, where, environment)]
    out = []
    keys = list(matrix)
    for combo in itertools.product(*(matrix[k] for k in keys)):
        variant = yaml.safe_load(yaml.safe_dump(raw))
        for k, v in zip(keys, combo, strict=True):
            _set(variant, k, v)
        tag = ",".join(f"{k.split('.')[-1]}={v}" for k, v in zip(keys, combo, strict=True))
        variant["name"] = f"{raw.get('name', 'scenario')}[{tag}]"
        out.append(validate(variant, f"{where} (matrix {tag})", environment))
    return out


MAX_NODES = 100_000  # values a scenario file may expand to


def load(path: Path, environment: bool = True) -> list[Scenario]:
    """Read a YAML scenario file; every error is a UsageError with one clear message. Without
    `environment`, the model alone is checked: nothing is fetched or measured."""
    if not path.exists():
        raise UsageError(f"No scenario file at {path}")
    if not path.is_file():
        raise UsageError(f"{path} is a directory, not a scenario file; name a .yaml file in it")
    try:
        raw = _parse(path.read_text(), path)
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot be read as text ({exc}); name a readable YAML "
                         "file") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise UsageError(f"{path}: not valid YAML{at}: {getattr(exc, 'problem', exc)}") from None
    if not isinstance(raw, dict):
        raise UsageError(f"{path}: expected a mapping with at least a 'name' field")
    return expand(with_fix(raw), str(path), environment)


def _parse(text: str, path: Path) -> Any:
    """A YAML document, refused when its aliases expand to more than MAX_NODES values (a 'billion
    laughs' file would otherwise take minutes and gigabytes in validation)."""
    loader = yaml.SafeLoader(text)
    try:
        root = loader.get_single_node()
        if root is not None and _expanded(root) > MAX_NODES:
            raise UsageError(f"{path}: its aliases expand to over {MAX_NODES:,} values; write the "
                             "values out or use fewer nested aliases")
        return loader.construct_document(root) if root is not None else None
    finally:
        loader.dispose()


def _expanded(root: yaml.Node) -> int:
    """How many values a composed document expands to, each shared node counted once per alias
    (capped)."""
    sizes: dict[int, int] = {}

    def size(node: yaml.Node) -> int:
        if id(node) not in sizes:
            # an alias back to a node being counted makes the document endless
            sizes[id(node)] = MAX_NODES + 1
            children = node.value if isinstance(node, yaml.SequenceNode) else [
                n for pair in node.value for n in pair] if isinstance(
                    node, yaml.MappingNode) else []
            sizes[id(node)] = min(MAX_NODES + 1, 1 + sum(size(c) for c in children))
        return sizes[id(node)]
    return size(root)


def with_fix(raw: dict) -> dict:
    """A file naming a known bug (`regression`) runs on the version that has it and on the one that
    fixed it."""
    bug, matrix = raw.get("regression"), raw.get("matrix")
    if not isinstance(bug, dict) or not {
            "affected", "fixed"} <= bug.keys() or not isinstance(matrix, dict | None):
        return raw
    if "kafka.version" in (matrix or {}):
        return raw
    return raw | {"matrix": {"kafka.version": [str(bug["affected"]), str(bug["fixed"])],
                             **(matrix or {})}}


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
        return [p for n, p in catalog().items()
                if n not in suites.get("regressions", []) + suites.get("findings", [])]
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
    close = closest(arg, list(catalog()))
    hint = f"did you mean {close!r}?" if close else "`kchaos scenarios list` names them"
    raise UsageError(f"No scenario file {shown(arg)} and no built-in scenario of that name; {hint}")
