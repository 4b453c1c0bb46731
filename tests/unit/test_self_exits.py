"""The lines of a Kafka node's log where it ended its own process, and only those."""

from __future__ import annotations

from harness.container_log import EXIT_LINE_CHARS, self_exits

# a removed KRaft leader on 4.4.0 (kip853-controller-swap, disrupt isolate-added)
CRASH = "\n".join((
    "[2026-12-03 14:55:16,413] INFO [RaftManager id=2] Completed transition to "
    "ResignedState(localId=2, epoch=1)",
    "[2026-12-03 14:55:16,421] ERROR Encountered fatal fault: Unexpected error in raft IO thread "
    "(org.apache.kafka.server.fault.ProcessTerminatingFaultHandler)",
    "java.lang.IllegalStateException: Received request or response with leader OptionalInt[2] "
    "and epoch 1 which is inconsistent with current leader OptionalInt[2] and epoch 1",
    "\tat org.apache.kafka.raft.KafkaRaftClient.maybeTransition(KafkaRaftClient.java:2701)"))
# what a SIGTERM the harness sends leaves: a clean shutdown, no fatal line
STOPPED = ("[2026-12-03 14:50:01,000] INFO [BrokerServer id=1] Transition from STARTED to "
           "SHUTTING_DOWN\n[2026-12-03 14:50:02,000] INFO [BrokerServer id=1] shut down completed "
           "(kafka.server.BrokerServer)\n")


def test_the_fatal_fault_line_and_its_exception_are_found():
    (line,) = self_exits(STOPPED + CRASH)
    assert line.startswith("[2026-12-03 14:55:16,421] ERROR Encountered fatal fault: Unexpected "
                           "error in raft IO thread")
    assert "java.lang.IllegalStateException: Received request" in line
    assert len(line) == EXIT_LINE_CHARS


def test_a_clean_stop_or_an_empty_log_is_no_exit():
    assert self_exits(STOPPED) == self_exits("") == []
