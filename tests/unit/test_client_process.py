"""The runner's hold on a client process can never block on a dead child: stopping one killed at any
moment returns at once."""

from __future__ import annotations

import os
import signal
import time

import pytest

from contracts.history import NUMBERING_STRIDE, HistoryWriter, read_jsonl
from contracts.scenario import CopierSpec, ProducerSpec
from contracts.share import ShareSpec
from runloop import share
from workloads.client_process import ClientProcess, Launch, _client
from workloads.worker import HUNG_S, CallWatch

NOWHERE = "127.0.0.1:1"  # loopback, nothing listens


def test_stopping_a_client_killed_mid_run_returns_at_once(tmp_path):
    for _ in range(5):  # the old Event-based stop hung only sometimes: try a few moments of death
        client = ClientProcess("producer", 0, ProducerSpec(rate=50), ("t",), 1, NOWHERE,
                               tmp_path).start()
        assert client.wait_ready(60)
        os.kill(client._proc.pid, signal.SIGKILL)
        began = time.monotonic()
        client.stop()
        client.join(5)
        assert time.monotonic() - began < 6 and not client.alive


def test_signalling_a_client_that_died_a_moment_ago_does_not_raise(tmp_path, monkeypatch):
    client = ClientProcess("producer", 0, ProducerSpec(rate=50), ("t",), 1, NOWHERE,
                           tmp_path).start()
    assert client.wait_ready(60)
    os.kill(client._proc.pid, signal.SIGKILL)
    client._proc.join(5)  # gone: its fork server has reaped it
    # the moment between its exit and the exit status reaching the runner, when it still looks alive
    monkeypatch.setattr(ClientProcess, "alive", property(lambda self: True))
    client.resume()
    client.kill()


def test_a_stopped_client_ends_on_its_own_and_counts_what_it_sent(tmp_path):
    client = ClientProcess("producer", 0, ProducerSpec(rate=100, message_timeout_ms=1000), ("t",),
                           1, NOWHERE, tmp_path).start()
    assert client.wait_ready(60)
    time.sleep(1)
    client.stop()
    client.join()
    assert not client.alive and client.errors > 0  # every send timed out against nothing


def test_a_restarted_client_process_never_reuses_a_seq_of_the_one_it_replaced(tmp_path):
    client = ClientProcess("producer", 0, ProducerSpec(rate=100, message_timeout_ms=1000), ("t",),
                           1, NOWHERE, tmp_path)
    for _ in range(2):  # as a client fault, or the runner after a hung call, restarts one
        client.start()
        assert client.wait_ready(60)
        time.sleep(3)  # its first sends time out against nothing, and their rows are flushed
        client.kill()
    client.start()
    client.stop()
    client.join()
    seqs = read_jsonl(tmp_path, "sends").column("seq").to_pylist()
    assert len(seqs) == len(set(seqs)) and {s // NUMBERING_STRIDE for s in seqs} >= {0, 1}


@pytest.mark.parametrize("kind, spec",
                         [("producer", ProducerSpec(transactional=True, idempotence=True)),
                                        ("copier", CopierSpec())])
def test_each_incarnation_numbers_its_transactions_from_a_range_of_its_own(tmp_path, kind, spec):
    history = HistoryWriter(tmp_path)
    client = _client(Launch(kind, 0, spec.model_dump_json(), ("t",), 1, NOWHERE, str(tmp_path),
                            30.0), 2, history)
    assert client.txn == 2 * NUMBERING_STRIDE and getattr(client, "seq", client.txn) == client.txn


def test_a_pause_returns_once_the_process_is_stopped(tmp_path):
    client = ClientProcess("producer", 0, ProducerSpec(rate=50), ("t",), 1, NOWHERE,
                           tmp_path).start()
    assert client.wait_ready(60)
    try:
        # SIGSTOP is delivered asynchronously: pause() waits for the stopped state
        for _ in range(20):
            client.pause()
            assert client.paused
            client.resume()
    finally:
        client.kill()


def test_a_call_is_hung_only_once_it_outlives_its_timeout_by_the_margin():
    watch = CallWatch()
    assert watch.hung() == ""
    with watch("send_offsets_to_transaction", 10.0):
        assert watch.hung() == ""
        watch.due = time.monotonic() - HUNG_S + 1  # due 19 s ago: slow, not hung
        assert watch.hung() == ""
        watch.due = time.monotonic() - HUNG_S - 1
        assert watch.hung().startswith("send_offsets_to_transaction has not returned 21 s after "
                                       "its timeout")
    assert watch.hung() == ""  # it returned


def test_a_share_member_with_no_records_is_restarted_once_before_any_fault(tmp_path, monkeypatch):
    monkeypatch.setattr(share, "REHAND_S", 2.0)
    monkeypatch.setattr(share, "HANDED_S", 4.0)
    history = HistoryWriter(tmp_path)
    members = [ClientProcess("share", i, ShareSpec(), ("t",), 1, NOWHERE, tmp_path).start()
               for i in range(2)]
    try:
        share.wait_handed(members, history)  # nothing listens: no member is ever handed a record
        history.flush()
        assert [m.incarnation for m in members] == [1, 1]
        events = read_jsonl(tmp_path, "events").to_pylist()
        assert sorted(e["source"] for e in events if e["kind"] == "recreated") == [
            "share-0", "share-1"]
    finally:
        for m in members:
            m.kill()
