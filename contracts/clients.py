"""Which client library a workload role runs: librdkafka (confluent-kafka) or the Java kafka-clients
of a release (workloads/java)."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator

from contracts.versions import JAVA_CLIENT_FROM, SHARE_FROM, release

LIBRDKAFKA, JAVA = "librdkafka", "java"
CLIENT = re.compile(r"^(librdkafka|java(:\d+\.\d+\.\d+)?)$")
EXPECTED = "'librdkafka', 'java' or 'java:X.Y.Z' (a kafka-clients release, e.g. 'java:4.4.0')"


def _client(value: str) -> str:
    if not CLIENT.match(value):
        raise ValueError(f"Expected {EXPECTED}")
    return value


ClientName = Annotated[str, AfterValidator(_client)]


def java_release(client: str, kafka_version: str) -> str | None:
    """The kafka-clients release a role's `client` runs (the cluster's own when it names none), or
    None for librdkafka."""
    if not client.startswith(JAVA):
        return None
    return client.partition(":")[2] or kafka_version


def client_problem(role: str, client: str, kafka_version: str) -> str | None:
    """Why a role cannot run on `client`: a kafka-clients release too old for the worker, or for
    the share consumer."""
    java = java_release(client, kafka_version)
    if java is None:
        return None
    if release(java) < JAVA_CLIENT_FROM:
        floor = ".".join(map(str, JAVA_CLIENT_FROM))
        return (f"{role}.client={client!r} runs kafka-clients {java}, older than {floor}, the "
                f"oldest the Java worker builds against; name one, e.g. 'java:{floor}.0'")
    if role == "share" and release(java) < SHARE_FROM:
        floor = ".".join(map(str, SHARE_FROM))
        return (f"share.client={client!r} runs kafka-clients {java}, whose share consumer is "
                f"older than {floor} (share groups production-ready); name 'java' or "
                f"'java:{floor}.0' or later")
    return None
