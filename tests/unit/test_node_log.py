"""What a broker that exits while starting is reported with: the first error of its log, not only
the tail."""

from __future__ import annotations

from harness.node import FIRST_ERROR

STARTUP_FAILURE = (
    "[2026-11-28 02:15:50,001] INFO Registered broker 3 at path /brokers/ids/3 "
    "(kafka.zk.KafkaZkClient)\n[2026-11-28 02:15:50,010] ERROR [KafkaServer id=3] Fatal error "
    "during KafkaServer startup. Prepare to shutdown "
    "(kafka.server.KafkaServer)\norg.apache.zookeeper.KeeperException$NodeExistsException: "
    "KeeperErrorCode = NodeExists\n\tat "
    "org.apache.zookeeper.KeeperException.create(KeeperException.java:126)\n[2026-11-28 "
    "02:15:57,060] ERROR Exiting Kafka. (kafka.Kafka$)\n"
)


def test_the_first_error_line_comes_with_the_exception_under_it():
    found = FIRST_ERROR.search(STARTUP_FAILURE)
    assert found is not None
    lines = found.group(0).splitlines()
    assert len(lines) == 2
    assert ("Fatal error during KafkaServer startup" in lines[0]
            and "NodeExistsException" in lines[1])


def test_a_log_without_an_error_has_none():
    assert FIRST_ERROR.search("[2026-11-28 02:15:50,001] INFO [KafkaServer id=3] started\n") is None
