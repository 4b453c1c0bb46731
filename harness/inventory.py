"""What a cluster's metadata holds beside records, as entries to compare across a change that must
keep them (a ZooKeeper-to-KRaft migration): topics, their replicas and own configs, SCRAM users."""

from __future__ import annotations

from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AdminClient,
    ConfigResource,
    ConfigSource,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)
from tenacity import Retrying, retry_if_exception_type, stop_after_delay, wait_fixed

# a SCRAM user planted before the change, so there is a credential to keep
WITNESS = UserScramCredentialUpsertion(
    "kchaos-witness", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), b"witness")
ASK_S = 10


def plant(admin: AdminClient) -> None:
    """Give the cluster a SCRAM credential to keep (without one there is none to compare), and
    wait until the brokers list it."""
    _retried(lambda: admin.alter_user_scram_credentials([WITNESS], request_timeout=ASK_S)[
        WITNESS.user].result(timeout=2 * ASK_S))
    for attempt in Retrying(stop=stop_after_delay(30), wait=wait_fixed(0.5), reraise=True,
                            retry=retry_if_exception_type((KafkaException, LookupError))):
        with attempt:
            if not any(e.startswith(f"user {WITNESS.user}:") for e in _users(admin)):
                raise LookupError(f"the brokers do not list SCRAM user {WITNESS.user} yet")


def entries(admin: AdminClient) -> list[str]:
    """Every topic's partition count, each partition's replicas in order, the configs set on the
    topic itself, and each SCRAM user's mechanisms, one sorted line each."""
    return _retried(lambda: sorted(_topics(admin) + _users(admin)))


def _topics(admin: AdminClient) -> list[str]:
    listed = admin.list_topics(timeout=ASK_S).topics
    names = sorted(t for t in listed if not t.startswith("__"))
    out = [f"topic {t}: partitions={len(listed[t].partitions)}" for t in names]
    out += [f"topic {t}: replicas[{p}]={','.join(map(str, m.replicas))}"
            for t in names for p, m in listed[t].partitions.items()]
    resources = [ConfigResource(ConfigResource.Type.TOPIC, t) for t in names]
    for resource, future in (admin.describe_configs(resources, request_timeout=ASK_S).items()
                             if resources else []):
        out += [f"topic {resource.name}: {e.name}={e.value}"
                for e in future.result(timeout=2 * ASK_S).values()
                if ConfigSource(e.source) == ConfigSource.DYNAMIC_TOPIC_CONFIG]
    return out


def _users(admin: AdminClient) -> list[str]:
    described = admin.describe_user_scram_credentials(request_timeout=ASK_S).result(
        timeout=2 * ASK_S)
    return [f"user {user}: {info.mechanism.name} iterations={info.iterations}"
            for user, d in described.items() for info in d.scram_credential_infos]


def _retried(ask):
    """`ask()`, again for 60 s while the cluster answers with errors (a leader moving, say)."""
    for attempt in Retrying(stop=stop_after_delay(60), wait=wait_fixed(1.0), reraise=True,
                            retry=retry_if_exception_type(KafkaException)):
        with attempt:
            return ask()
