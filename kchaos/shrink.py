"""`kchaos shrink RUN_DIR`: the smallest subset of a violating run's fault ops that still shows its
violation (delta debugging; each candidate is run on a few seeds, since Kafka is not deterministic),
written as a scenario file."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import yaml

from contracts.errors import UsageError
from contracts.results import RunResult
from contracts.scenario import Scenario
from faults.plan import PlannedOp, op_spec

Runner = Callable[[Scenario, list[PlannedOp]], RunResult]


def signature(result: RunResult) -> set[str]:
    """The forbidden anomalies a shrunk schedule must still show (one of them suffices)."""
    if result.verdict is not False or not result.forbidden:
        raise UsageError(f"{result.run_dir} violated no guarantee ({result.badge}); shrink needs a "
                         "run whose result is FAIL or KNOWN BUG, with a forbidden anomaly")
    return set(result.forbidden)


def shows(scenario: Scenario, ops: list[PlannedOp], wanted: set[str], tries: int,
          run: Runner) -> bool:
    """Whether these ops show one of the wanted violations on any of `tries` consecutive seeds."""
    for k in range(tries):
        r = run(scenario.model_copy(update={"seed": scenario.seed + k}), ops)
        if r.verdict is False and wanted & set(r.forbidden):
            return True
    return False


def ddmin(ops: list[PlannedOp], test: Callable[[list[PlannedOp]], bool]) -> list[PlannedOp]:
    """Zeller's delta debugging: a 1-minimal subset of `ops` (as far as `test` tells) for which
    `test` holds."""
    n = 2
    while len(ops) >= 2:
        size = -(-len(ops) // n)
        chunks = [ops[i:i + size] for i in range(0, len(ops), size)]
        smaller = next((c for c in chunks if test(c)), None)
        if smaller is not None:
            ops, n = smaller, 2
            continue
        rest = next((r for c in chunks if len(chunks) > 2
                     and test(r := [o for o in ops if o not in c])), None)
        if rest is not None:
            ops, n = rest, max(n - 1, 2)
        elif n >= len(ops):
            break
        else:
            n = min(len(ops), 2 * n)
    return ops


def as_scenario(scenario: Scenario, ops: list[PlannedOp]) -> dict:
    """The scenario with one fault line per kept op, each firing once at its time: a file to attach
    to a report."""
    raw = scenario.model_dump(mode="json", by_alias=True, exclude_defaults=True)
    lines = []
    for op in ops:  # a mix's op becomes a line of the kind and target it drew
        spec = op_spec(scenario.faults[op.index], op).model_dump(
            mode="json", by_alias=True, exclude_defaults=True)
        spec.pop("kinds", None)
        lines.append(spec
                     | {"after": op.at, "for": op.hold, "every": scenario.duration, "jitter": 0})
    return raw | {"name": f"{scenario.name}-shrunk", "faults": lines}


def shrink(scenario: Scenario, ops: list[PlannedOp], original: RunResult, tries: int, run: Runner,
           out: Path) -> tuple[list[PlannedOp], Path]:
    """Shrink a violating run's ops and write the smallest schedule as `out` (a scenario YAML)."""
    wanted = signature(original)
    if not shows(scenario, ops, wanted, tries, run):
        raise UsageError(f"{', '.join(sorted(wanted))} did not show again in {tries} runs of the "
                         "whole schedule; try more with --tries")
    kept = ddmin(ops, lambda candidate: shows(scenario, candidate, wanted, tries, run))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(yaml.safe_dump(as_scenario(scenario, kept), sort_keys=False))
    return kept, out
