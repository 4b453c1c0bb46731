"""What a transactional producer's settings must satisfy: librdkafka's limits on its timeouts, and
how long a transaction may stay open."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from contracts.scenario import ProducerSpec


def transaction_problem(p: ProducerSpec) -> str | None:
    """Why these producer settings cannot run, or None."""
    if p.txn_open_ms and not p.transactional:
        return (f"producer.txn_open_ms={p.txn_open_ms} needs producer.transactional=true; remove "
                "it")
    if not p.transactional:
        return None
    if p.message_timeout_ms > p.transaction_timeout_ms:
        return (f"producer.message_timeout_ms={p.message_timeout_ms} exceeds "
                f"producer.transaction_timeout_ms={p.transaction_timeout_ms} (librdkafka refuses "
                "a transactional producer whose messages outlive its transactions); lower "
                "message_timeout_ms")
    if p.socket_timeout_ms is not None and p.socket_timeout_ms > p.transaction_timeout_ms + 100:
        return (f"producer.socket_timeout_ms={p.socket_timeout_ms} exceeds "
                f"producer.transaction_timeout_ms={p.transaction_timeout_ms} + 100 (librdkafka "
                "refuses such a transactional producer); lower socket_timeout_ms or leave it unset")
    if p.txn_open_ms >= p.transaction_timeout_ms:
        return (f"producer.txn_open_ms={p.txn_open_ms} must stay under "
                f"producer.transaction_timeout_ms={p.transaction_timeout_ms}, or every transaction "
                "times out; lower it")
    return None
