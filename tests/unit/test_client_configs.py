"""librdkafka accepts every client configuration the catalog's scenarios make: a setting it refuses
(a socket timeout above a transaction timeout, say) would otherwise show only as a run in which no
client ever started."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, KafkaException, Producer

from contracts.errors import UsageError
from contracts.scenario import Scenario
from kchaos.catalog import catalog, load, validate
from workloads.consumer import member_config
from workloads.copier import copier_config
from workloads.producer import producer_config
from workloads.txn_producer import transactional_config

# nothing listens: constructing a client validates its settings without a broker
BOOTSTRAP = "127.0.0.1:1"


def configs(s: Scenario) -> list[tuple[str, dict]]:
    """Every librdkafka configuration the scenario's clients are built with."""
    p = s.producer
    out = [("producer", transactional_config(p, BOOTSTRAP, 0) if p.transactional
            else producer_config(p, BOOTSTRAP, "chaos-producer-0"))] if p.count else []
    out += [(f"consumer-{c}", member_config(s.consumer, c, BOOTSTRAP))
            for c in range(s.consumer.count)]
    return out + ([("copier", copier_config(s.copier, BOOTSTRAP, 0))] if s.workload == "eos-copy"
                  else [])


@pytest.mark.parametrize("name", sorted(catalog()))
def test_librdkafka_accepts_every_client_of_the_scenario(name):
    for s in load(catalog()[name]):
        for who, conf in configs(s):
            try:
                client = (Producer if "group.id" not in conf else Consumer)(conf)
            except KafkaException as exc:
                pytest.fail(f"{name} [{s.kafka.version}] {who}: librdkafka refused its settings: "
                            f"{exc}")
            if isinstance(client, Consumer):
                client.close()


def test_a_socket_timeout_above_the_transaction_timeout_is_refused_before_anything_starts():
    raw = {"name": "t", "producer": {"transactional": True, "transaction_timeout_ms": 10000,
                                     "message_timeout_ms": 10000, "socket_timeout_ms": 60000}}
    with pytest.raises(UsageError, match="producer.socket_timeout_ms=60000 exceeds "
                                         "producer.transaction_timeout_ms"):
        validate(raw, "t.yaml")
