"""The nemesis on real brokers: fault lines run side by side, an op never hits a broker another
line's op holds, every planned op is accounted for, and chaos that did not happen makes the verdict
unknown."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from faults.plan import plan
from kchaos.catalog import expand
from runloop.check import run_and_check

SCENARIO = {
    "name": "two-lines", "duration": "20s", "seed": 3,
    "producer": {"count": 1, "rate": 200}, "consumer": {"count": 1},
    "faults": [
        # holds broker 1 down 10 s+
        {"fault": "kill", "target": 1, "after": "2s", "every": "60s", "for": "10s"},
        # finds broker 1 held
        {"fault": "pause", "target": 1, "after": "5s", "every": "60s", "for": "1s"},
        # must keep its own pace
        {"fault": "pause", "target": 3, "after": "4s", "every": "4s", "for": "1s"},
    ],
}


def test_lines_run_side_by_side_and_a_line_that_never_fired_makes_the_run_unknown(tmp_path):
    (scenario,) = expand(SCENARIO, "test")
    out = run_and_check(scenario, tmp_path / "runs")
    rows = pq.read_table(out.run_dir / "history" / "faults.parquet").to_pylist()
    ops = [r | {"detail": json.loads(r["detail"])} for r in rows if r["fault"] != "heal"]
    # rows are written as ops end: the skipped pause ends long before the kill that held its broker
    assert sorted((r["line"], r["outcome"]) for r in ops if r["line"] != 2) == [
        (0, "fired"), (1, "skipped")]
    skipped = next(r for r in ops if r["line"] == 1)
    assert (skipped["detail"]["skipped"]
            == "brokers [1] were held by another fault line's op"), skipped
    paced = [r for r in ops if r["line"] == 2]
    assert [r["detail"]["planned_at"] for r in paced] == [4.0, 8.0, 12.0, 16.0]
    assert all(r["outcome"] == "fired" and r["detail"]["delay_s"] < 1.0 for r in paced), paced
    r = out.result
    assert r.verdict is None and r.facts.ops == {"fired": 5, "skipped": 1}
    assert any(u.startswith("the chaos did not happen as planned: fault line 1 (pause) never took "
                            "effect: 1 skipped")
               for u in r.unknown_because), r.unknown_because


MIX = {
    "name": "mixed", "duration": "20s", "seed": 11,
    "producer": {"count": 1, "rate": 200}, "consumer": {"count": 1},
    "faults": [{"fault": "mix", "kinds": ["pause", "isolate", "tcp-reset"], "after": "2s",
                "every": "4s", "for": "1s"}],
}


@pytest.mark.slow  # make test-all: unit tests draw and validate mixes; this fires one for real
def test_a_mix_fires_the_kinds_and_targets_its_seed_drew(tmp_path):
    (scenario,) = expand(MIX, "test")
    planned = plan(scenario.faults, scenario.duration, scenario.seed)
    assert len({o.fault for o in planned}) > 1  # the seed mixes kinds
    out = run_and_check(scenario, tmp_path / "runs")
    rows = pq.read_table(out.run_dir / "history" / "faults.parquet").to_pylist()
    ops = sorted((r["planned"], r["fault"], json.loads(r["detail"])["target"], r["outcome"])
                 for r in rows
                 if r["fault"] != "heal")
    assert [(fault, target, outcome) for _, fault, target, outcome in ops] == [
        (o.fault, o.target, "fired") for o in planned]
    assert out.result.verdict is True, out.result.unknown_because
