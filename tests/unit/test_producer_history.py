"""Every send the producer enqueued ends with exactly one history row, even when the client breaks
underneath."""

from __future__ import annotations

import time

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from contracts.history import HistoryWriter, read_jsonl
from contracts.payload import encode
from contracts.scenario import ProducerSpec
from workloads.producer import MAX_CLIENT_ERRORS, ProducerClient

# loopback, nothing listens: librdkafka queues and never gets a delivery report in time
NOWHERE = "127.0.0.1:1"


class BrokenPoll:
    """A real Producer whose poll() starts raising, as confluent-kafka's SystemError from a callback
    did."""

    def __init__(self, conf: dict, healthy_polls: int) -> None:
        self._real, self._left = Producer(conf), healthy_polls

    def poll(self, timeout: float = 0) -> int:
        self._left -= 1
        if self._left < 0:
            raise SystemError("_PyErr_SetObject: exception <class 'str'> is not a BaseException "
                              "subclass")
        return self._real.poll(timeout)

    def __getattr__(self, name: str):
        return getattr(self._real, name)

    def __len__(self) -> int:
        return len(self._real)


def sends_of(directory) -> list[dict]:
    return read_jsonl(directory, "sends").to_pylist()


def run_for(client: ProducerClient, history: HistoryWriter, seconds: float) -> list[dict]:
    """Run the client for a while and stop it without waiting for message.timeout.ms; its send
    rows."""
    client._close = lambda producer: None
    client.start()
    time.sleep(seconds)
    client.stop()
    client.join(10)
    history.close(compact=False)
    return sends_of(history.dir)


def test_sends_never_delivered_are_purged_and_recorded_as_info(tmp_path):
    history = HistoryWriter(tmp_path)
    client = ProducerClient(0, ProducerSpec(rate=200, message_timeout_ms=60000), "t", NOWHERE,
                            history)
    rows = run_for(client, history, 0.5)
    assert client.seq > 10 and sorted(r["seq"] for r in rows) == list(range(client.seq))
    # purged as the client ends
    assert {(r["outcome"], r["error"]) for r in rows} == {("info", "_PURGE_QUEUE")}


def test_a_client_that_keeps_failing_stops_and_leaves_no_send_unrecorded(tmp_path):
    history = HistoryWriter(tmp_path)
    client = ProducerClient(0, ProducerSpec(rate=0, message_timeout_ms=60000), "t", NOWHERE,
                            history)
    client._new_producer = lambda: BrokenPoll({"bootstrap.servers": NOWHERE, "log_level": 0},
                                              healthy_polls=50)
    client._close = lambda producer: None
    client.start().join(30)
    assert not client.thread.is_alive()
    history.close(compact=False)
    rows = sends_of(tmp_path)
    assert sorted(r["seq"] for r in rows) == list(range(client.seq)) and client.seq >= 50
    events = read_jsonl(tmp_path, "events").to_pylist()
    assert sum(e["kind"] == "client-error" for e in events) == MAX_CLIENT_ERRORS
    assert events[-1]["kind"] == "stopped"


def test_sends_librdkafka_refuses_are_fail_and_the_enqueued_rest_info(tmp_path):
    history = HistoryWriter(tmp_path)
    client = ProducerClient(0, ProducerSpec(rate=0, message_timeout_ms=60000), "t", NOWHERE,
                            history)
    client._new_producer = lambda: Producer({"bootstrap.servers": NOWHERE, "log_level": 0,
                                             "queue.buffering.max.messages": 100})
    rows = run_for(client, history, 0.3)
    assert sorted(r["seq"] for r in rows) == list(range(client.seq)) and client.seq > 1000
    assert {(r["outcome"], r["error"]) for r in rows} == {
        ("info", "_PURGE_QUEUE"), ("fail", "_QUEUE_FULL")}
    assert sum(r["outcome"] == "info" for r in rows) == 100


class RaisingBatch(BrokenPoll):
    """A real Producer whose produce_batch enqueues half of each batch and then raises."""

    def produce_batch(self, topic: str, messages: list[dict], **kwargs) -> int:
        queued = self._real.produce_batch(topic, messages[: len(messages) // 2], **kwargs)
        raise RuntimeError(f"failed after queuing {queued}")


def test_sends_of_a_batch_call_that_raised_end_info_never_fail(tmp_path):
    history = HistoryWriter(tmp_path)
    client = ProducerClient(0, ProducerSpec(rate=0, message_timeout_ms=60000), "t", NOWHERE,
                            history)
    client._new_producer = lambda: RaisingBatch({"bootstrap.servers": NOWHERE, "log_level": 0},
                                                healthy_polls=10**6)
    client._close = lambda producer: None
    client.start().join(30)
    history.close(compact=False)
    rows = sends_of(tmp_path)
    assert client.seq >= 64 * 10 and sorted(r["seq"] for r in rows) == list(range(client.seq))
    # the half each call enqueued is purged as the client ends; the half it never enqueued has no
    # report at all
    assert {(r["outcome"], r["error"]) for r in rows} == {
        ("info", "_PURGE_QUEUE"), ("info", "NO_DELIVERY_REPORT")}


def test_an_ok_send_s_encoded_row_reads_back_as_its_columns(tmp_path):
    history = HistoryWriter(tmp_path)
    client = ProducerClient(7, ProducerSpec(keyed=True), 'odd%s"topic', NOWHERE, history)
    client._pending.update({19: 100, 20: 100})
    client._delivered(None,
                      Message(topic="t", value=encode(7, 19), partition=2, offset=12345678901))
    # acks=0: acked without an offset, which Message.offset() gives as None
    client._delivered(None, Message(topic="t", value=encode(7, 20), partition=1, offset=-1001))
    history.close(compact=False)
    rows = sorted(sends_of(tmp_path), key=lambda r: r["seq"])
    assert rows[0]["t_complete"] >= 100 and rows[1]["t_complete"] >= 100
    for r in rows:
        del r["t_complete"]
    assert rows == [
        {"producer": 7, "seq": 19, "key": "7-3", "topic": 'odd%s"topic', "partition": 2,
         "t_invoke": 100, "outcome": "ok", "error": None, "offset": 12345678901, "txn": -1},
        {"producer": 7, "seq": 20, "key": "7-4", "topic": 'odd%s"topic', "partition": 1,
         "t_invoke": 100, "outcome": "ok", "error": None, "offset": -1, "txn": -1}]
    assert client.acked == 2 and not client._pending


def test_a_failed_send_without_a_partition_is_info_on_partition_minus_one(tmp_path):
    history = HistoryWriter(tmp_path)
    client = ProducerClient(0, ProducerSpec(), "t", NOWHERE, history)
    client._pending[5] = 100
    timed_out = Message(topic="t", value=encode(0, 5), partition=-1, offset=-1001)
    client._delivered(KafkaError(KafkaError._MSG_TIMED_OUT), timed_out)
    history.close(compact=False)
    [row] = sends_of(tmp_path)
    assert (row["outcome"], row["error"], row["partition"], row["offset"]) == (
        "info", "_MSG_TIMED_OUT", -1, -1)
    assert client.errors == 1 and not client._pending


class FatalOnce(BrokenPoll):
    """A real Producer whose poll raises one fatal error, as confluent-kafka does instead of calling
    error_cb."""

    def poll(self, timeout: float = 0) -> int:
        self._left -= 1
        if self._left == 0:
            raise KafkaException(KafkaError(KafkaError.OUT_OF_ORDER_SEQUENCE_NUMBER,
                                            "sequence desync", fatal=True))
        return self._real.poll(timeout)


def test_a_fatal_error_recreates_the_producer_and_sending_goes_on(tmp_path):
    history = HistoryWriter(tmp_path)
    client = ProducerClient(0, ProducerSpec(rate=500, message_timeout_ms=60000), "t", NOWHERE,
                            history)
    made = []
    client._new_producer = lambda: made.append(FatalOnce({
        "bootstrap.servers": NOWHERE, "log_level": 0},
                                                         healthy_polls=20)) or made[-1]
    rows = run_for(client, history, 1.0)
    events = read_jsonl(tmp_path, "events").to_pylist()
    assert [e["kind"] for e in events][:2] == ["fatal", "recreated"]
    assert events[0]["detail"] == "OUT_OF_ORDER_SEQUENCE_NUMBER: sequence desync"
    assert len(made) >= 2 and not any(e["kind"] == "client-error" for e in events)
    assert sorted(r["seq"] for r in rows) == list(range(client.seq))
