"""Remote tier faults: the op sends the tier's lazyfs its command, always heals it after the hold,
and says it had no effect when no write reached the tier."""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass, field

import pytest

from contracts.faultlines import FaultSpec
from faults.ops import Ctx, NoEffect
from faults.registry import OPS


@dataclass
class Tier:
    refused: int
    said: list[str] = field(default_factory=list)

    def lazyfs(self, command: str) -> dict:
        self.said.append(command)
        return {"faults": {"refused": self.refused, "slowed": 0}} if command == "heal" else {}


@dataclass
class Cluster:
    tier: Tier


def ctx(tier: Tier) -> Ctx:
    stop = threading.Event()
    stop.set()  # the hold returns at once
    return Ctx(Cluster(tier), "chaos", random.Random(0), stop)  # type: ignore[arg-type]


def test_a_full_remote_tier_is_healed_and_says_what_it_refused():
    tier = Tier(refused=7)
    detail = OPS["remote-full"](ctx(tier), FaultSpec(fault="remote-full"), [])
    assert tier.said == ["full", "heal"]
    assert detail == {"action": "full", "tier": {"refused": 7, "slowed": 0}}


def test_a_remote_fault_that_no_write_reached_had_no_effect_and_is_healed_still():
    tier = Tier(refused=0)
    spec = FaultSpec(fault="remote-slow", latency_ms=250)
    with pytest.raises(NoEffect, match="no write or fsync reached the remote tier"):
        OPS["remote-slow"](ctx(tier), spec, [])
    assert tier.said == ["slow 250", "heal"]
