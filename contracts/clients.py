"""Which client library a workload role runs: librdkafka (confluent-kafka) or the Java kafka-clients
of a release (workloads/java)."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator

from contracts.versions import JAVA_CLIENT_FROM, release

LIBRDKAFKA, JAVA = "librdkafka", "java"
CLIENT = re.compile(r"^(librdkafka|java(:\d+\.\d+\.\d+)?)$")
EXPECTED = "'librdkafka', 'java' or 'java:X.Y.Z' (a kafka-clients release, e.g. 'java:4.4.0')"
# the roles the Java worker plays; share members are librdkafka's alone
JAVA_ROLES = ("producer", "consumer", "copier")


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
    """Why a role cannot run on `client` (a role the Java worker lacks, or a client too old)."""
    java = java_release(client, kafka_version)
    if java is None:
        return None
    if role not in JAVA_ROLES:
        return (f"{role}.client={client!r}: the Java worker plays the "
                f"{', '.join(JAVA_ROLES[:-1])} and {JAVA_ROLES[-1]} roles, not the {role}'s; use "
                "'librdkafka'")
    if release(java) < JAVA_CLIENT_FROM:
        floor = ".".join(map(str, JAVA_CLIENT_FROM))
        return (f"{role}.client={client!r} runs kafka-clients {java}, older than {floor}, the "
                f"oldest the Java worker builds against; name one, e.g. 'java:{floor}.0'")
    return None
