"""What a comparison's columns are: versions, upgrade paths, or clients when a scenario ran on
several."""

from __future__ import annotations

from reports.compare import write_compare
from tests.unit.test_compare_and_junit import result


def test_clients_compared_on_one_version_are_columns_of_their_own(tmp_path):
    results = [result("a", "4.4.0", "true", 1), result("a", "4.4.0", "false", 2, lost=3)]
    results[1].settings = {"producer": {"client": "java:3.9.2"}}
    for r in results:
        r.run_dir = str(tmp_path / "runs" / str(r.seed))
    html, md = write_compare(results, tmp_path / "compare")
    text = md.read_text()
    assert "| scenario | Kafka 4.4.0 librdkafka | Kafka 4.4.0 java:3.9.2 |" in text
    assert text.startswith("# kafka-chaos client comparison\n") and "tell clients apart" in text
    assert "<h1>kafka-chaos client comparison</h1>" in html.read_text() and "version" not in text


def test_a_catalog_whose_scenarios_name_their_own_client_compares_versions(tmp_path):
    results = [result(s, v, "true", seed) for s in ("a", "t") for v in ("4.4.0", "4.3.1")
               for seed in (1, 2)]
    for r in results:
        r.run_dir = str(tmp_path / "runs" / str(r.seed))
        if r.scenario == "t":
            r.settings = {"producer": {"client": f"java:{r.kafka}"}}
    _, md = write_compare(results, tmp_path / "compare")
    text = md.read_text()
    assert text.startswith("# kafka-chaos version comparison\n")
    assert text.count("| scenario | Kafka 4.4.0 | Kafka 4.3.1 |") == 1
    assert "| a | PASS×2" in text and "| t (java) | PASS×2" in text


def test_upgrade_paths_are_columns_named_from_and_to(tmp_path):
    up = {"faults": [{"fault": "kill"}, {"fault": "upgrade", "to": "4.4.0"}]}
    migrate = {"kafka": {"metadata": "zookeeper"}, "faults": [{"fault": "migrate"}]}
    results = [result("u", "3.9.2", "true", 1).model_copy(update={"settings": up}),
               result("u", "4.3.1", "true", 2).model_copy(update={"settings": up}),
               result("u", "4.4.0", "true", 3),
               result("m", "3.9.2", "true", 4).model_copy(update={"settings": migrate})]
    for r in results:
        r.run_dir = str(tmp_path / "runs" / str(r.seed))
    _, md = write_compare(results, tmp_path / "compare")
    text = md.read_text()
    assert "| scenario | Kafka 4.4.0 | Kafka 4.3.1->4.4.0 | Kafka 3.9.2->4.4.0 |" in text
    assert "| scenario | Kafka 3.9.2:zookeeper->kraft |" in text  # a table of its own: one row
    assert text.startswith("# kafka-chaos upgrade comparison\n") and "upgrade paths apart" in text
    assert "only with 4 seeds an upgrade)" in text


def test_versions_compared_beside_an_upgrade_of_their_own_are_a_version_comparison(tmp_path):
    up = {"faults": [{"fault": "upgrade", "to": "4.4.0"}]}
    results = [result("a", v, "true", seed) for v in ("4.4.0", "4.3.1") for seed in (1, 2)]
    results += [result("u", "4.3.1", "true", 3).model_copy(update={"settings": up})]
    for r in results:
        r.run_dir = str(tmp_path / "runs" / str(r.seed))
    _, md = write_compare(results, tmp_path / "compare")
    text = md.read_text()
    assert "| scenario | Kafka 4.3.1->4.4.0 |" in text
    assert text.startswith("# kafka-chaos version comparison\n") and "upgrade" not in text.split(
        "## What differs")[1]
