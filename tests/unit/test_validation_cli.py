"""Every bad input the reports issue found: exit 2, one line naming the field, the value and the
fix, no traceback, and nothing started (the Docker engine is never even asked for)."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from contracts.versions import SUPPORTED_VERSIONS
from harness import jars
from harness.broker_config import (
    CONSUMER_GROUP_TIMING,
    ClusterSpec,
    broker_defaults,
    broker_properties,
    harness_settings,
)
from kchaos import cli, commands
from kchaos.catalog import catalog, load


def kchaos(argv: list[str], capsys, monkeypatch) -> tuple[int, list[str]]:
    def started(*args, **kwargs):
        raise AssertionError("validation let something start")

    monkeypatch.setattr(commands, "ensure_engine", started)
    code = cli.main(argv)
    return code, [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]


@pytest.mark.parametrize("body, says", [
    ("duration: -30", "Expected duration >= 1.0 but got duration=-30.0"),
    ("duration: 0", "Expected duration >= 1.0 but got duration=0.0"),
    ("faults: [{fault: kill, for: -5}]", "Expected faults.0.for >= 0.0 but got faults.0.for=-5.0"),
    ("faults: [{fault: kill, every: 0s}]", "Expected faults.0.every >= 0.5 but got "
                                           "faults.0.every=0.0"),
    ("faults: [{fault: kill, target: 7}]", "faults.0.target=7 must name brokers among 1..3 "
                                           "(kafka.brokers=3)"),
    ("faults: [{fault: kill, target: [1, 9]}]", "faults.0.target=[1, 9] must name brokers among "
                                                "1..3"),
    ("kafka: {version: '9.9.9'}", "Kafka 9.9.9 is not on Maven Central (no "
                                  "org.apache.kafka:{kafka_2.13,kafka_2.12,kafka_2.11}:9.9.9) "
                                  "(s.yaml: kafka.version='9.9.9'). Nearest supported: "),
    ("kafka: {version: '0.9.0.1'}", "Kafka 0.9.0.1 is older than 0.10.2, the oldest the harness "
                                    "runs"),
    ("kafka: {version: '2.0.0', metadata: kraft}", "KRaft is production-ready from Kafka 3.3 "
                                                   "(KIP-833); kafka.version='2.0.0' needs "
                                                   "kafka.metadata='zookeeper'"),
    ("kafka: {version: '0.10.2.2'}", "producer.idempotence=true (KIP-98) needs Kafka 0.11 or "
                                     "later, not kafka.version='0.10.2.2'; set "
                                     "producer.idempotence: false"),
    ("kafka: {config: {log.retention.hour: 1}}", "Unknown config "
                                                 "kafka.config.'log.retention.hour': Kafka 4.4.0 "
                                                 "defines no such broker config; did you mean "
                                                 "'log.retention.hours'?"),
    ("topic: {config: {flush.message: 1}}", "did you mean 'flush.messages'?"),
    ("kafka: {broker_overrides: {2: {replica.fetch.max.byte: 1}}}", "Unknown config "
     "kafka.broker_overrides.2.'replica.fetch.max.byte': Kafka 4.4.0 defines no such broker "
     "config; did you mean "
     "'replica.fetch.max.bytes'?"),
    ("kafka: {broker_overrides: {4: {num.io.threads: 2}}}",
     "kafka.broker_overrides names broker 4, but the brokers are 1..3"),
    ("faults: [{fault: stale-hw-isr-join}]", "fault stale-hw-isr-join reads and triggers elections "
                                             "through ZooKeeper; kafka.version='4.4.0' runs KRaft: "
                                             "use a ZooKeeper-mode version"),
    ("faults: [{fault: fast-failover-divergence}]", "fault fast-failover-divergence reads and "
                                                    "triggers elections through ZooKeeper; "
                                                    "kafka.version='4.4.0' runs KRaft"),
    ("producer: {acks: al}", "but got producer.acks='al' (did you mean 'all'?)"),
    ("producer: {ackz: 1}", "Unknown field 'producer.ackz' (did you mean 'acks'?)"),
    ("faults: [{fault: kil}]", "but got faults.0.fault='kil' (did you mean 'kill'?)"),
    ("faults: [{fault: kill, target: leader, every: 7s, for: 2s}, {fault: pause, target: "
     "followers, every: 11s, for: 4s}]", "faults.0: kill keeps its line busy about"),
    ("faults: [{fault: kill, after: 70s}]", "the line would never fire"),
    ("faults: [{fault: pause, kbit: 256}]", "faults.0.kbit=256 is not read by a 'pause' fault "
                                            "(only 'bandwidth' reads it); remove it"),
    ("faults: [{fault: kill, latency_ms: 300}]", "faults.0.latency_ms=300 is not read by a 'kill' "
                                                 "fault (only 'disk-slow', 'latency', "
                                                 "'hold-requests', 'remote-slow' read it); remove "
                                                 "it"),
    ("faults: [{fault: hold-requests, request: EndTx}]", "Expected one of 'any', 'Produce', "
                                                         "'Fetch', 'ListOffsets', 'Metadata', "),
    ("faults: [{fault: hold-requests, request: EndTx}]", "but got faults.0.request='EndTx' (did "
                                                         "you mean 'EndTxn'?)"),
    ("faults: [{fault: hold-requests, link: remote-metadata, direction: response}]",
     "faults.0.link='remote-metadata' is tiered storage's metadata producer's listener, which "
     "only topic.remote_storage: true starts; set it"),
    ("faults: [{fault: hold-requests, direction: response, request: EndTxn(commit)}]",
     "request: EndTxn(commit) reads the request's body; with direction: response use request: "
     "EndTxn"),
    ("faults: [{fault: hold-requests, direction: response, request: Produce, action: error, "
     "error: NOT_LEADER}]", "but got faults.0.error='NOT_LEADER' (did you mean "
                             "'NOT_LEADER_OR_FOLLOWER'?)"),
    ("faults: [{fault: hold-requests, direction: response, request: Produce, action: error}]",
     "action: error needs error: NAME, the Kafka error code it answers with; only that action "
     "takes error"),
    ("faults: [{fault: hold-requests, request: Produce, action: error, error: "
     "NOT_LEADER_OR_FOLLOWER}]", "action: error rewrites answers to one kind of request; set "
                                 "direction: response and a request, like request: Produce"),
    ("faults: [{fault: hold-requests, client_id: 'kchaos producer'}]",
     "Expected a client id prefix of 1 to 64 letters, digits, '.', '_' or '-', like "
     "kchaos-producer"),
    ("faults: [{fault: hold-requests, client_id: rlmm}]", "client_id selects among one kind of "
                                                          "request; set a request, like Produce"),
    ("faults: [{fault: hold-requests, link: controller, direction: response, request: "
     "ZooKeeper.multi}]", "faults.0.request='ZooKeeper.multi' holds ZooKeeper's answers, but "
                          "kafka.version='4.4.0' runs KRaft; use a ZooKeeper-mode cluster"),
    ("faults: [{fault: hold-requests, request: ZooKeeper.multi}]",
     "request: ZooKeeper.multi is ZooKeeper's: it holds the answers on a node's own ZooKeeper "
     "connection; set link: controller and direction: response"),
    ("kafka: {version: 3.9.2, metadata: zookeeper}\nfaults: [{fault: hold-requests, link: "
     "controller, direction: response, request: Produce}]",
     "faults.0: in ZooKeeper mode link: controller is the node's own ZooKeeper connection; set "
     "direction: response and a ZooKeeper request, like request: ZooKeeper.multi"),
    ("faults: [{fault: kill, request: EndTxn}]", "faults.0.request='EndTxn' is not read by a "
                                                 "'kill' fault (only 'hold-requests' reads it); "
                                                 "remove it"),
    ("producer: {rate: -1}", "Expected producer.rate >= 0.0 but got producer.rate=-1"),
    ("producer: {txn_open_ms: 100}", "producer.txn_open_ms=100 needs producer.transactional=true; "
                                     "remove it"),
    ("producer: {transactional: true, transaction_timeout_ms: 30000, txn_open_ms: 30000}",
     "producer.txn_open_ms=30000 must stay under producer.transaction_timeout_ms=30000, or every "
     "transaction times out; lower it"),
    ("producer: {transactional: true, idempotence: false}", "producer.transactional=true needs "
                                                            "producer.idempotence=true"),
    ("producer: {transactional: true, transaction_timeout_ms: 10000}",
     "producer.message_timeout_ms=30000 exceeds producer.transaction_timeout_ms=10000"),
    ("faults: [{fault: copier-kill}]", "faults.0.fault='copier-kill' needs workload='eos-copy'"),
    ("workload: eos-copy\ncopier: {offsets: inside}", "Expected one of 'in-transaction', 'outside' "
                                                      "but got copier.offsets='inside'"),
    ("producer: {txn_topics: 2}", "producer.txn_topics=2 needs producer.transactional=true and "
                                  "workload='produce-consume' (not transactional=False, "
                                  "workload='produce-consume'); set txn_topics: 1"),
    ("producer: {abort_ratio: 1.5}", "Expected producer.abort_ratio <= 1.0 but got "
                                     "producer.abort_ratio=1.5"),
    ("consumer: {isolation: read_comitted}", "(did you mean 'read_committed'?)"),
    ("kafka: {version: '3.9.2'}\nconsumer: {group_protocol: consumer}",
     "consumer.group_protocol='consumer' (KIP-848) needs Kafka 4.0 or later"),
    ("faults: [{fault: producer-pause, target: 2}]", "faults.0.target=2 must name producers among "
                                                     "0..1"),
    ("faults: [{fault: kill, target: txn-coordinatr}]", "txn-coordinator"),
    ("producer: {count: 0}", "Expected producer.count >= 1 but got producer.count=0"),
    ("producer: {client: jav}", "Expected 'librdkafka', 'java' or 'java:X.Y.Z' (a kafka-clients "
                                "release, e.g. 'java:4.4.0') but got producer.client='jav'"),
    ("producer: {client: 'java:2.8.0'}", "producer.client='java:2.8.0' runs kafka-clients 2.8.0, "
                                         "older than 3.0, the oldest the Java worker builds "
                                         "against; name one, e.g. 'java:3.0.0'"),
    ("producer: {client: 'java:9.9.9'}", "s.yaml: producer.client='java:9.9.9': Maven Central has "
                                         "no org.apache.kafka:kafka-clients:9.9.9; nearest: "),
    ("workload: share\nshare: {client: 'java:4.1.0'}",
     "share.client='java:4.1.0' runs kafka-clients 4.1.0, whose share consumer is older than 4.2 "
     "(share groups production-ready); name 'java' or 'java:4.2.0' or later"),
    ("faults: [{fault: upgrade}]", "faults.0: fault: upgrade needs to: VERSION, the Kafka release "
                                   "the brokers roll to"),
    ("faults: [{fault: upgrade, to: '4.3.0'}]", "faults.0.to='4.3.0' is not newer than "
                                                "kafka.version='4.4.0'; an upgrade goes to a later "
                                                "release (to downgrade, start on the older one "
                                                "and add rollback: true)"),
    ("kafka: {version: '3.9.2', metadata: zookeeper}\nfaults: [{fault: upgrade, to: '4.4.0'}]",
     "ZooKeeper mode was removed in Kafka 4.0: a ZooKeeper-mode cluster migrates to KRaft on 3.9 "
     "before it upgrades to 4.4.0 (faults.0.to='4.4.0'); start from a KRaft cluster"),
    ("faults: [{fault: upgrade, to: '4.9.9'}]", "Kafka 4.9.9 is not on Maven Central (no "
                                                "org.apache.kafka:{kafka_2.13,kafka_2.12,"
                                                "kafka_2.11}:4.9.9) (s.yaml: faults.0.to='4.9.9')"),
    ("faults: [{fault: kill, to: '4.4.0'}]", "faults.0.to='4.4.0' is not read by a 'kill' fault "
                                             "(only 'upgrade' reads it); remove it"),
    ("faults: [{fault: migrate}]", "faults.0: fault: migrate moves a ZooKeeper-mode cluster to "
                                   "KRaft, and kafka.version='4.4.0' runs KRaft; use "
                                   "kafka.version: 3.9.2 with kafka.metadata: zookeeper"),
    ("kafka: {version: '3.6.2', metadata: zookeeper}\nfaults: [{fault: migrate}]",
     "faults.0: the ZooKeeper-to-KRaft migration needs Kafka 3.8.1 or later (KAFKA-17457), not "
     "kafka.version='3.6.2'; use 3.9.2"),
    ("kafka: {version: '3.9.2', metadata: zookeeper}\n"
     "faults: [{fault: migrate}, {fault: migrate}]",
     "faults.1: a scenario migrates the cluster once; keep one migrate line"),
    ("kafka: {version: '3.9.2', metadata: zookeeper}\n"
     "faults: [{fault: migrate}, {fault: stale-hw-isr-join}]",
     "fault stale-hw-isr-join reads and triggers elections through ZooKeeper, which a migration "
     "leaves behind (faults.0); run it in a scenario of its own"),
    ("faults: [{fault: pause, target: zookeeper}]", "faults.0.target='zookeeper' needs a "
                                                    "ZooKeeper-mode cluster; kafka.version='4.4.0' "
                                                    "runs KRaft"),
    ("kafka: {version: '3.9.2', metadata: zookeeper}\n"
     "faults: [{fault: isolate, target: zookeeper}]",
     "faults.0.fault='isolate' cannot aim at ZooKeeper: use 'kill', 'terminate', 'pause', or aim "
     "it at brokers"),
    ("producer: {acks: " + "x" * 5000 + "}", "but got producer.acks='" + "x" * 78 + "…"),
    ("laugh: &a [x, x, x, x, x, x, x, x, x, x]\n"  # each line ten aliases of the last: 10**7 values
     + "".join(f"l{i}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(6)),
     "s.yaml: its aliases expand to over 100,000 values; write the values out or use fewer nested "
     "aliases"),
])
def test_a_bad_scenario_file(tmp_path, capsys, monkeypatch, body, says):
    path = tmp_path / "s.yaml"
    path.write_text(f"name: x\n{body}\n" + ("" if "duration" in body else "duration: 60s\n"))
    monkeypatch.chdir(tmp_path)
    code, lines = kchaos(["run", "s.yaml"], capsys, monkeypatch)
    assert code == 2 and len(lines) == 1, lines
    # echoed values are cut
    assert says in lines[0] and "Traceback" not in lines[0] and "x" * 80 not in lines[0]


@pytest.mark.parametrize("argv, says", [
    (["run", "{dir}"], "is a directory, not a scenario file"),
    (["run", "{dir}/list.yaml"], "expected a mapping with at least a 'name' field"),
    (["run", "{dir}/spaced.yaml"], "Expected a scenario name of letters, digits and . _ - [ ] = , "
                                   "(no spaces) but got name='a b'"),
    (["run", "acks-all-leader-kill", "--duration", "5 minutes"], "but got --duration '5 minutes'"),
    (["run", "acks-all-leader-kill", "--duration", "-5"], "but got --duration '-5'"),
    (["run", "acks-all-leader-kill", "--kafka", "9.9"], "Expected a Kafka version like '4.4.0' but "
                                                        "got --kafka='9.9'"),
    (["run", "acks-all-leader-kill", "--client", "rust"],
     "Expected 'librdkafka', 'java' or 'java:X.Y.Z' (a kafka-clients release, e.g. 'java:4.4.0') "
     "but got --client 'rust'"),
    (["run", "share-member-kill", "--client", "java:4.1.0"],
     "share.client='java:4.1.0' runs kafka-clients 4.1.0, whose share consumer is older than 4.2"),
    (["suite", "smoke", "--seeds", "0"], "Expected --seeds between 1 and 1000 but got --seeds 0"),
    (["run", "acks-all-leader-kill", "--kafka", "3.9.2:zk"],
     "Expected --kafka VERSION, VERSION:kraft or VERSION:zookeeper (e.g. 3.9.2:zookeeper), or an "
     "upgrade path such as 3.9.2->4.4.0 or 3.9.2:zookeeper->kraft, but got --kafka '3.9.2:zk'"),
    (["run", "upgrade-4.3-to-4.4", "--kafka", "4.4.0->4.3.1"],
     "--kafka 4.4.0->TO='4.3.1' is not newer than kafka.version='4.4.0'"),
    (["run", "latency-slow-controller", "--kafka", "3.9.2:zookeeper"],
     "--kafka 3.9.2:zookeeper: the scenario runs in kraft mode only (kafka.metadata: kraft), not "
     "zookeeper: ask for Kafka 3.9.2 without ':zookeeper'"),
    (["compare", "--kafka", ""], "Expected comma-separated Kafka versions like "
                                 "'4.3.1,3.9.2:zookeeper' but got --kafka ''"),
    (["analyze", "{dir}"], "is not a run directory (no scenario.json)"),
    (["analyze", "{dir}/gone"], "gone does not exist; name a run directory such as "
                                "runs/<scenario>/<stamp>-<seed>"),
    (["run", "acks-all-leader-kil"], "No scenario file 'acks-all-leader-kil' and no built-in "
                                     "scenario of that name; did you mean 'acks-all-leader-kill'?"),
    (["run", "nothing-like-it"], "no built-in scenario of that name; `kchaos scenarios list` names "
                                 "them"),
])
def test_bad_arguments(tmp_path, capsys, monkeypatch, argv, says):
    (tmp_path / "list.yaml").write_text("- name: x\n")
    (tmp_path / "spaced.yaml").write_text("name: a b\n")
    code, lines = kchaos([a.format(dir=tmp_path) for a in argv], capsys, monkeypatch)
    assert code == 2 and len(lines) == 1, lines
    assert says in lines[0]


def test_analyze_refuses_a_run_directory_without_a_history(tmp_path, capsys, monkeypatch):
    # a resolved scenario.json, as a run writes it
    (scenario,) = load(catalog()["acks-all-leader-kill"])
    (tmp_path / "scenario.json").write_text(scenario.model_dump_json(by_alias=True))
    code, lines = kchaos(["analyze", str(tmp_path)], capsys, monkeypatch)
    assert code == 2 and "has no history to analyze" in lines[-1]
    assert not (tmp_path / "report.html").exists() and not (tmp_path / "results.json").exists()


def test_our_own_broker_settings_are_configs_every_supported_version_defines():
    ours = set(broker_defaults(3)) | set(CONSUMER_GROUP_TIMING)
    for version in SUPPORTED_VERSIONS:
        assert ours <= broker_properties(ClusterSpec(version), 1, "kafka-1", 9094).keys(), version
        assert ours <= jars.config_names(version).broker, version
    assert not set(CONSUMER_GROUP_TIMING) & broker_properties(
        ClusterSpec("2.8.2"), 1, "kafka-1", 9094).keys()


def test_a_silent_broker_keeps_its_session_as_long_in_either_metadata_mode():
    """ZooKeeper's session and KRaft's broker session decide how soon a dead broker's partitions
    move: unequal, a comparison of the modes would show the harness's settings as a difference
    between Kafkas."""
    zk = broker_properties(ClusterSpec("3.9.2", metadata="zookeeper"), 1, "kafka-1", 9094)
    kraft = broker_properties(ClusterSpec("3.9.2", metadata="kraft"), 1, "kafka-1", 9094)
    assert zk["zookeeper.session.timeout.ms"] == kraft["broker.session.timeout.ms"] == "6000"
    for version in SUPPORTED_VERSIONS:
        assert "broker.session.timeout.ms" in jars.config_names(version).broker, version


ENGINE = ("pyspark", "docker", "pyarrow", "confluent_kafka", "kafka", "kazoo", "scipy",
          "matplotlib", "pandas")


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["scenarios", "list"],
                                  ["validate", "acks-all-leader-kill"]])
def test_the_light_commands_load_none_of_the_engine(argv):
    """--help, --version, scenarios list and validate read files only: Docker, Spark, the clients
    and the report's and statistics' modules stay unimported (seconds of imports)."""
    probe = (f"import sys; from kchaos import cli\ntry: cli.main({argv!r})\nexcept SystemExit: "
             f"pass\nprint('loaded:', *sorted(m for m in {ENGINE!r} if m in sys.modules), "
             "file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stderr.splitlines()[-1] == "loaded:", done.stderr[-300:]


def test_scenarios_list_fetches_nothing(capsys, monkeypatch):
    def fetched(*args, **kwargs):
        raise AssertionError("scenarios list reached for Maven Central or the jars")

    for name in ("check_version", "config_names", "fetch_jars", "central_versions"):
        monkeypatch.setattr(jars, name, fetched)
    assert cli.main(["scenarios", "list"]) == 0
    assert "KNOWN BUG KAFKA-7128 (lost-write)" in capsys.readouterr().out


def test_version_names_the_release_and_the_commit(capsys):
    with pytest.raises(SystemExit) as done:
        cli.main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out.startswith("kchaos ")


def test_every_option_and_argument_of_every_command_has_help_text():
    commands = next(a for a in cli.parser()._actions
                    if isinstance(a, argparse._SubParsersAction)).choices
    silent = [f"{name} {a.dest}" for name, p in commands.items() for a in p._actions if not a.help]
    assert silent == []


def test_results_name_the_broker_settings_the_harness_added_and_not_those_the_scenario_set():
    kraft = harness_settings(ClusterSpec("4.3.1", metadata="kraft",
                                         config={"replica.lag.time.max.ms": "60000"}))
    assert (kraft["broker.session.timeout.ms"] == "6000"
            and kraft["group.consumer.session.timeout.ms"] == "10000")
    # the scenario's own; a path
    assert "replica.lag.time.max.ms" not in kraft and "log.dirs" not in kraft
    old = harness_settings(ClusterSpec("2.0.0", metadata="zookeeper"))
    assert (old["zookeeper.session.timeout.ms"] == "6000"
            and not set(CONSUMER_GROUP_TIMING) & old.keys())
    assert old["replica.lag.time.max.ms"] == broker_defaults(3)["replica.lag.time.max.ms"]
