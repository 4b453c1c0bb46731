"""The KIP-279 op's producer pauses: it refuses producers another fault paused, and on the way out
resumes only the ones it paused itself."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from faults.failovers import _producers_paused
from faults.ops import NoEffect


class Producer:
    """A client that only knows whether it is paused."""

    def __init__(self, paused: bool = False) -> None:
        self.alive, self.paused = True, paused

    def pause(self) -> None:
        self.paused = True

    def resume(self) -> None:
        self.paused = False


def ctx(*producers: Producer) -> SimpleNamespace:
    return SimpleNamespace(clients=SimpleNamespace(producers=list(producers)))


def test_only_the_ops_own_pauses_are_undone_even_when_it_fails():
    a, b, c = Producer(), Producer(), Producer()
    with pytest.raises(RuntimeError), _producers_paused(ctx(a, b, c), "f") as (producers, pauses):
        pauses.pause(a, b)
        pauses.resume(a)
        c.pause()  # another fault's pause, meanwhile
        raise RuntimeError("the op failed half-way")
    assert (a.paused, b.paused, c.paused) == (False, False, True)


@pytest.mark.parametrize("producers", [(Producer(),), (Producer(), Producer(paused=True))])
def test_too_few_or_paused_producers_are_no_effect(producers):
    with pytest.raises(NoEffect, match="none paused"), _producers_paused(ctx(*producers), "f"):
        pass
