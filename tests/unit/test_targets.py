"""Coordinator targets: the partition that owns a key is Kafka's (Java's String.hashCode, Utils.abs,
modulo)."""

from __future__ import annotations

from types import SimpleNamespace

from faults.targets import coordinator, java_hash, resolve


def test_java_hash_matches_java():
    # values printed by `String.hashCode()` on OpenJDK 17
    assert [java_hash(s) for s in ("chaos-txn-0", "chaos", "héllo")] == [
        564732160, 94623616, 103094734]
    # Integer.MIN_VALUE: Utils.abs makes it partition 0
    assert java_hash("polygenelubricants") == -2147483648


class Meta:
    def __init__(self, leaders: dict[str, list[int]]) -> None:
        self.leaders = leaders

    def partitions(self, topic: str) -> dict:
        return {p: SimpleNamespace(id=p, leader=leader) for p,
                leader in enumerate(self.leaders.get(topic, []))}


def test_coordinators_are_the_leaders_of_the_owning_internal_partitions():
    cluster = SimpleNamespace(metadata=Meta({"__transaction_state": [1, 2, 3] * 16 + [1, 2],
                                             "__consumer_offsets": [3, 1, 2] * 16 + [3, 1]}))
    # 564732160 % 50 = 10 -> leader 2; 94623616 % 50 = 16 -> leader 1
    assert coordinator(cluster, "__transaction_state", "chaos-txn-0") == ([2], 10)
    assert resolve("txn-coordinator", cluster, "t", None) == ([2], 10)
    assert resolve("group-coordinator", cluster, "t", None, "chaos") == ([1], 16)
    assert coordinator(cluster, "__consumer_offsets", "polygenelubricants") == ([3], 0)
    assert coordinator(SimpleNamespace(metadata=Meta({})), "__transaction_state", "x") == ([], -1)


class ShareMeta(Meta):
    def topic_id(self, topic: str) -> str:
        return "D_VhPLBfRZeDR-f880-EWQ"


class OnePartition:
    """A random draw that always picks partition 1 of the topic."""

    def randrange(self, n: int) -> int:
        return 1


def test_the_share_coordinator_owns_the_key_of_a_share_partition():
    # Kafka's SharePartitionKey: "group:topicId:partition"; OpenJDK 17 prints -1884264918 for
    # "chaos-share:D_VhPLBfRZeDR-f880-EWQ:1".hashCode(), and 1884264918 % 50 = 18 -> leader 1
    cluster = SimpleNamespace(metadata=ShareMeta({"t": [1, 2, 3],
                                                  "__share_group_state": [1, 2, 3] * 16 + [1, 2]}))
    assert java_hash("chaos-share:D_VhPLBfRZeDR-f880-EWQ:1") == -1884264918
    assert resolve("share-coordinator", cluster, "t", OnePartition(), "chaos-share") == ([1], 1)
