"""A preferred-replica election the controller took without moving the leader is asked for again, a
bounded number of times; when none takes, the op has no effect and says what ZooKeeper held."""

from __future__ import annotations

import random
import threading

import pytest

from faults import failovers
from faults.ops import Ctx, NoEffect
from harness.zookeeper import PartitionState


class _Controller:
    """Elects the preferred replica (broker 2) only from the `takes_at`-th request on; broker 3
    leads before."""

    def __init__(self, takes_at: int) -> None:
        self.takes_at, self.requests = takes_at, 0

    def elect_preferred(self, topic: str, partition: int) -> None:
        self.requests += 1

    def state(self) -> PartitionState:
        leader = 2 if self.requests >= self.takes_at else 3
        return PartitionState(leader, self.requests, (3, 4, 2))


@pytest.fixture
def ctx(monkeypatch) -> Ctx:
    monkeypatch.setattr(failovers, "ELECTION_WAIT_S", 0.3)
    return Ctx(cluster=None, topic="chaos", rng=random.Random(0),
               stop=threading.Event())  # type: ignore[arg-type]


@pytest.mark.parametrize("takes_at", [1, 2, 3])
def test_the_election_is_asked_for_until_the_preferred_replica_leads(ctx, takes_at):
    controller = _Controller(takes_at)
    _, requests = failovers._elect(ctx, "f", controller, controller.state, 0, 2, "broker 2 elected")
    assert requests == controller.requests == takes_at


def test_an_election_that_never_takes_names_the_requests_and_what_zookeeper_held(ctx):
    controller = _Controller(takes_at=99)
    with pytest.raises(NoEffect) as caught:
        failovers._elect(ctx, "f", controller, controller.state, 0, 2, "broker 2 elected")
    assert controller.requests == failovers.ELECTION_REQUESTS == 3
    assert str(caught.value) == ("f: broker 2 elected did not happen within 0.3 s (ZooKeeper had "
                                 "leader 3, leader epoch 3, ISR [3, 4, 2]); election requests "
                                 "made: 3")


def test_a_run_that_ends_stops_asking(ctx):
    controller = _Controller(takes_at=99)
    ctx.stop.set()
    with pytest.raises(NoEffect, match="the run ended before broker 2 elected; election requests "
                                       "made: 1"):
        failovers._elect(ctx, "f", controller, controller.state, 0, 2, "broker 2 elected")
    assert controller.requests == 1
