"""The one signal policy: what SIGINT, SIGTERM and SIGHUP raise, which handlers come back, and what
a compaction holds until it ends."""

from __future__ import annotations

import signal

import pytest

from contracts import signals


@pytest.fixture(autouse=True)
def no_signal_yet(monkeypatch):
    monkeypatch.setattr(signals, "SIGNALLED", [])


@pytest.mark.parametrize(("sig", "raised", "code"), [(signal.SIGINT, KeyboardInterrupt, None),
                                                     (signal.SIGTERM, SystemExit, 143),
                                                     (signal.SIGHUP, SystemExit, 129)])
def test_each_ending_signal_raises_in_the_main_thread_and_is_remembered(sig, raised, code):
    before = signal.getsignal(sig)
    with pytest.raises(raised) as ended, signals.handled():
        signal.raise_signal(sig)
    assert getattr(ended.value, "code", None) == code
    assert list(signals.SIGNALLED) == [sig]
    assert signal.getsignal(sig) is before


def test_a_handler_some_caller_set_is_kept_unless_the_policy_is_asked_for_outright():
    def callers(_signum, _frame):
        raise LookupError("the caller's")

    old = signal.signal(signal.SIGTERM, callers)
    try:
        with pytest.raises(LookupError), signals.handled(unless_caller=True):
            signal.raise_signal(signal.SIGTERM)
        with pytest.raises(SystemExit), signals.handled():
            signal.raise_signal(signal.SIGTERM)
        assert signal.getsignal(signal.SIGTERM) is callers
    finally:
        signal.signal(signal.SIGTERM, old)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_deferred_block_runs_to_its_end_and_the_signal_lands_after_it(sig):
    done = []
    with pytest.raises(SystemExit), signals.handled():
        with signals.deferred():
            signal.raise_signal(sig)
            done.append("the whole block")
        done.append("never")
    assert done == ["the whole block"]
