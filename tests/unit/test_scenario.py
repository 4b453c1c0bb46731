"""Scenario validation names the field and the allowed values; matrices expand before anything
runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from contracts.errors import UsageError
from harness.broker_config import ClusterSpec, broker_properties, free_port
from kchaos.catalog import catalog, load
from kchaos.cli import parser
from kchaos.overrides import override, with_seeds


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "s.yaml"
    p.write_text(text)
    return p


@pytest.mark.parametrize("text, message", [
    ("name: x\nproducer: {acks: al}", "Expected one of '0', '1', 'all' but got producer.acks='al'"),
    ("name: x\nfaults: [{fault: kil}]", "but got faults.0.fault='kil'"),
    ("name: x\nfaults: [{fault: kill, target: leaderr}]", "but got faults.0.target='leaderr'"),
    ("name: x\nduration: 10q", "Expected a duration like '90s', '5m' or '500ms' but got "
                               "duration='10q'"),
    ("name: x\nproducer: {ackz: 1}", "Unknown field 'producer.ackz'"),
    ("name: x\ntopic: {replication_factor: 3, min_insync_replicas: 4}",
     "topic.min_insync_replicas=4 exceeds"),
    ("name: x\nkafka: {version: '4.3.1', metadata: zookeeper}",
     "ZooKeeper mode was removed in Kafka 4.0"),
    ("name: x\nproducer: {acks: '1', idempotence: true}", "producer.idempotence=true needs "
                                                          "producer.acks='all'"),
    ("producer: {acks: all}", "Missing required field 'name'"),
    ("name: x\ntopic: {name: 'a b'}", "Expected a Kafka topic name (1-249 letters, digits, '.', "
                                      "'_' or '-') but got topic.name='a b'"),
    ("name: x\nproducer: [1", "not valid YAML at line"),
    ("name: x\ntopic: {remote_storage: true, retention_bytes: 10, local_retention_bytes: 20}",
     "topic.local_retention_bytes=20 exceeds topic.retention_bytes=10"),
    ("name: x\ntopic: {local_retention_ms: 20}",
     "topic.local_retention_ms=20 is read only with topic.remote_storage: true"),
    ("name: x\nkafka: {version: '3.5.2'}\ntopic: {remote_storage: true}",
     "topic.remote_storage=true needs tiered storage (KIP-405), in Kafka 3.6 and later"),
    ("name: x\nfaults: [{fault: remote-full}]", "faults.0.fault='remote-full' breaks the remote "
                                                "tier, which only topic.remote_storage: true"),
    ("name: x\ntopic: {segment_bytes: 1000}", "topic.segment_bytes=1000 is below Kafka 4.4.0's "
                                             "minimum of 1048576"),
    ("name: x\nkafka: {version: '4.1.1'}\nworkload: share",
     "workload='share' (KIP-932 share groups) needs Kafka 4.2 or later, not kafka.version='4.1.1'"),
    ("name: x\nfaults: [{fault: kill, target: share-coordinator}]",
     "faults.0.target='share-coordinator' needs workload='share' (not 'produce-consume')"),
    ("name: x\nworkload: share\nshare: {release: 0.7, reject: 0.5}",
     "share.release=0.7 plus share.reject=0.5 exceeds 1"),
])
def test_bad_scenarios_get_one_clear_message(tmp_path, text, message):
    with pytest.raises(UsageError) as err:
        load(write(tmp_path, text))
    assert message in str(err.value)
    assert err.value.exit_code == 2


def test_acks_accepts_numbers_and_all(tmp_path):
    assert load(write(tmp_path,
                      "name: x\nproducer: {acks: 1, idempotence: false}"))[0].producer.acks == "1"


def test_matrix_expands_every_combination_and_validates_each(tmp_path):
    runs = load(write(tmp_path, "name: m\nproducer: {idempotence: false}\n"
                                "matrix: {producer.acks: ['1', all], topic.partitions: [1, 2]}"))
    assert [s.name for s in runs] == ["m[acks=1,partitions=1]", "m[acks=1,partitions=2]",
                                      "m[acks=all,partitions=1]", "m[acks=all,partitions=2]"]
    with pytest.raises(UsageError, match="matrix acks=al"):
        load(write(tmp_path, "name: m\nproducer: {idempotence: false}\nmatrix: {producer.acks: "
                             "['1', al]}"))


def test_durations(tmp_path):
    s = load(write(tmp_path, "name: x\nduration: 2m\nfaults: [{fault: pause, every: 2, for: "
                             "500ms, after: 1.5}]"))[0]
    assert (s.duration, s.faults[0].every, s.faults[0].for_, s.faults[0].after) == (
        120.0, 2.0, 0.5, 1.5)


def test_role_faults_keep_their_default_target_through_command_line_overrides(tmp_path):
    text = ("name: x\nfaults: [{fault: zombie}, {fault: isolate-controller}, {fault: kill},"
            " {fault: zombie, target: one}]")
    for s in (load(write(tmp_path, text))[0],
              override(load(write(tmp_path, text)), None, 7, "30s")[0]):
        assert [f.target for f in s.faults] == ["leader", "controller", "one", "one"]


def test_every_built_in_scenario_is_valid():
    names = catalog()
    assert len(names) >= 12
    for path in names.values():
        assert load(path)


def test_suite_and_compare_take_a_first_seed_and_never_an_abbreviated_option(capsys):
    a = parser().parse_args(["compare", "--kafka", "4.3.1", "--seed", "7", "--seeds", "2"])
    base = load(catalog()["acks-all-leader-kill"]) + load(catalog()["controller-failover"])
    scenarios = with_seeds(base, a.seeds, a.seed)
    assert [s.seed for s in scenarios] == [7, 8, 7, 8]
    assert [s.seed for s in with_seeds(base, 2)] == [
        base[0].seed, base[0].seed + 1, base[1].seed, base[1].seed + 1]
    with pytest.raises(SystemExit) as exit_:
        parser().parse_args(["suite", "smoke", "--see", "3"])
    assert exit_.value.code == 2 and "unrecognized arguments: --see 3" in capsys.readouterr().err


def test_a_tiered_topic_sets_its_remote_tier_and_the_brokers_mount_one():
    (s,) = load(catalog()["kafka20732-tiered-retention-fresh-leader"])[:1]
    assert s.topic.settings() | {"remote.storage.enable": "true", "segment.bytes": "1048576",
                                 "retention.bytes": "8388608"} == s.topic.settings()
    props = broker_properties(ClusterSpec(tiered=True), 1, "kafka-1", 9999)
    assert props["remote.log.storage.system.enable"] == "true"
    assert "remote.log.storage.system.enable" not in broker_properties(ClusterSpec(), 1, "k", 1)


def test_one_brokers_overrides_reach_its_server_properties_only():
    s, _fixed = load(catalog()["kafka7128-stale-hw-isr-join"])
    spec = ClusterSpec(s.kafka.version, s.kafka.brokers, s.kafka.mode, s.kafka.broker_config(),
                       s.kafka.per_broker_config())
    lagging, other = (broker_properties(spec, n, f"kafka-{n}", 9094) for n in (4, 2))
    assert (lagging["replica.fetch.max.bytes"] == "65536"
            and lagging["replica.fetch.wait.max.ms"] == "500")
    assert "replica.fetch.max.bytes" not in other and other["replica.fetch.wait.max.ms"] == "2000"


def test_published_ports_are_distinct_and_below_the_ephemeral_range():
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    ports = [free_port() for _ in range(40)]
    assert len(set(ports)) == 40 and max(ports) < low
