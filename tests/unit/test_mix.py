"""A random fault mix: each op's kind and target drawn from the seed, replayable and shrinkable like
any line, and judged by the traits of every kind it may fire."""

from __future__ import annotations

import json

import pytest

from contracts.errors import UsageError
from contracts.faultkinds import FAULT_KINDS
from contracts.faultlines import MIX_TARGETS
from faults import plan as schedule
from kchaos.catalog import validate
from reports.guarantees import allowed

MIX = {"fault": "mix", "kinds": ["kill", "pause", "isolate", "unclean-sequence"], "every": "20s",
       "for": "2s"}


def scenario(*faults: dict, **more) -> dict:
    return {"name": "m", "duration": "300s", "faults": list(faults), **more}


def test_a_seed_draws_each_ops_kind_and_a_target_for_those_aimed_at_brokers():
    s = validate(scenario(MIX), "s")
    ops = schedule.plan(s.faults, s.duration, s.seed)
    assert ops == schedule.plan(s.faults, s.duration, s.seed) != schedule.plan(
        s.faults, s.duration, s.seed + 1)
    assert {o.fault for o in ops} == set(MIX["kinds"])  # 15 ops draw every kind
    assert all((o.target in MIX_TARGETS) == (FAULT_KINDS[o.fault].aims == "brokers") for o in ops)
    assert any(o.target is None for o in ops) and len({o.target for o in ops}) > 2


def test_a_plain_line_plans_as_before_and_a_mix_beside_it_leaves_its_times_alone():
    kill = {"fault": "kill", "every": "20s", "for": "5s", "jitter": "3s"}
    alone = validate(scenario(kill), "s")
    mixed = validate(scenario(kill, MIX), "s")
    first = [(o.at, o.fault, o.target) for o in schedule.plan(alone.faults, 300, 42)]
    assert all(target is None and fault == "kill" for _, fault, target in first)
    assert [o.at for o in schedule.plan(mixed.faults, 300, 42) if o.index == 0] != []


def test_a_schedule_keeps_the_drawn_kind_and_target_and_an_older_one_still_reads(tmp_path):
    s = validate(scenario(MIX), "s")
    ops = schedule.plan(s.faults, s.duration, s.seed)
    schedule.save(ops, tmp_path / "schedule.json")
    assert schedule.load(tmp_path / "schedule.json") == ops
    (tmp_path
     / "old.json").write_text(json.dumps([{"at": 5.0, "index": 0, "fault": "kill", "hold": 2.0}]))
    assert schedule.load(tmp_path / "old.json") == [schedule.PlannedOp(5.0, 0, "kill", 2.0)]


def test_an_op_fires_its_drawn_kind_at_its_drawn_target():
    s = validate(scenario(MIX), "s")
    op = next(o for o in schedule.plan(s.faults, s.duration, s.seed) if o.fault == "pause")
    fired = schedule.op_spec(s.faults[0], op)
    assert (fired.fault, fired.target, fired.for_) == ("pause", op.target, 2.0)


@pytest.mark.parametrize("line, says", [
    ({"fault": "mix"}, "fault: mix needs kinds: [...]"),
    ({"fault": "kill", "kinds": ["pause"]}, "only a mix takes kinds"),
    ({"fault": "mix", "kinds": ["consumer-kill"]}, "Expected fault kinds among 'kill'"),
    ({"fault": "mix", "kinds": ["pause"], "kbit": 256}, "faults.0.kbit=256 is not read by a 'mix' "
                                                        "fault"),
    ({"fault": "mix", "kinds": ["pause", "stale-hw-isr-join"]},
     "fault stale-hw-isr-join reads and triggers elections through ZooKeeper"),
    ({"fault": "mix", "kinds": ["rolling-restart", "pause"]},
     "the kinds this mix drew for seed 42 keep its line busy longer than every=10 s, so 11 of its "
     "30 ops"),
])
def test_a_mix_is_refused_in_one_line_when_it_cannot_run(line, says):
    with pytest.raises(UsageError, match=says.replace("[", r"\[").replace("]", r"\]")):
        validate(scenario({"every": "10s", "for": "2s", **line}), "s")
    # a kind of it reads it
    validate(scenario({**MIX, "kinds": ["latency", "pause"], "latency_ms": 300}), "s")


def test_a_mix_is_judged_by_every_kind_it_may_fire_aimed_at_one_broker():
    safe = {"producer": {"acks": "all", "idempotence": True}, "topic": {"min_insync_replicas": 2}}
    power = {**MIX, "kinds": ["pause", "power-loss"]}
    # never every replica at once
    assert "lost-write" not in allowed(validate(scenario(power, **safe), "s"))
    one_replica = {**safe, "topic": {"replication_factor": 1, "min_insync_replicas": 1}}
    assert "lost-write" in allowed(validate(scenario(power, **one_replica), "s"))
    everyone = {"fault": "power-loss", "target": "all", "every": "60s", "for": "2s"}
    assert "lost-write" in allowed(validate(scenario(everyone, **safe), "s"))
