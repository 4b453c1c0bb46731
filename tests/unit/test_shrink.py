"""Delta debugging of a violating schedule: the 1-minimal subset, tried on several seeds, written as
a scenario."""

from __future__ import annotations

import pytest
import yaml

from contracts.errors import UsageError
from contracts.results import RunResult
from faults.plan import PlannedOp, plan
from kchaos.catalog import validate
from kchaos.shrink import ddmin, shrink

SCENARIO = {"name": "padded", "duration": "60s", "seed": 7, "faults": [
    {"fault": "kill", "target": "leader", "every": "20s", "for": "5s", "after": "5s"},
    {"fault": "consumer-pause", "every": "25s", "for": "3s", "after": "8s"},
    {"fault": "packet-loss", "every": "30s", "for": "4s", "after": "2s", "probability": 0.2}]}


def verdict(violated: bool, seed: int) -> RunResult:
    return RunResult(scenario="padded", kafka="4.3.1", seed=seed, run_dir="r", verdict=not violated,
                     forbidden={"lost-write": 3} if violated else {})


def test_ddmin_finds_the_two_ops_that_together_cause_it():
    ops = [PlannedOp(float(t), 0, f"f{t}", 1.0) for t in range(8)]
    calls = []

    def test(candidate):
        calls.append(len(candidate))
        return {"f2", "f5"} <= {o.fault for o in candidate}
    assert [o.fault for o in ddmin(ops, test)] == ["f2", "f5"]
    assert len(calls) < 2 ** 8  # not every subset


def test_shrink_tries_seeds_keeps_the_needed_op_and_writes_a_scenario_that_replans_it(tmp_path):
    scenario = validate(SCENARIO, "test")
    ops = plan(scenario.faults, scenario.duration, scenario.seed)
    assert len(ops) == 7
    needed = ops[3]  # shows only on the second seed of a candidate: a one-seed shrink would drop it
    seen = []

    def run(s, candidate):
        seen.append(s.seed)
        return verdict(needed in candidate and s.seed == scenario.seed + 1, s.seed)
    kept, path = shrink(scenario, ops, verdict(True, 7), 2, run, tmp_path / "minimal.yaml")
    assert kept == [needed] and set(seen) == {7, 8}
    again = validate(yaml.safe_load(path.read_text()), "minimal.yaml")
    assert [(o.at, o.fault, o.hold) for o in plan(again.faults, again.duration, again.seed)] == [
        (needed.at, needed.fault, needed.hold)]


def test_shrink_refuses_a_run_that_violated_nothing(tmp_path):
    scenario = validate(SCENARIO, "test")
    with pytest.raises(UsageError, match="violated no guarantee"):
        shrink(scenario, [], verdict(False, 7), 2, lambda s, o: verdict(False, 7),
               tmp_path / "m.yaml")


def test_a_mix_op_shrinks_to_a_line_of_the_kind_and_target_it_drew(tmp_path):
    mixed = validate({"name": "m", "duration": "60s", "seed": 7, "faults": [
        {"fault": "mix", "kinds": ["kill", "pause", "isolate"], "every": "15s", "for": "2s",
         "after": "5s"}]}, "t")
    ops = plan(mixed.faults, mixed.duration, mixed.seed)
    # a drawn target, not the line's default
    needed = next(o for o in ops if o.target not in (None, "one"))

    def run(s, candidate):
        return verdict(needed in candidate, s.seed)
    kept, path = shrink(mixed, ops, verdict(True, 7), 1, run, tmp_path / "minimal.yaml")
    again = validate(yaml.safe_load(path.read_text()), "minimal.yaml")
    (line,) = again.faults
    assert kept == [needed] and (line.fault, line.target, line.after) == (
        needed.fault, needed.target, needed.at)
