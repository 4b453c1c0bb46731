"""Known Kafka bugs on real brokers: the release that had the bug loses acknowledged writes to the bug's fault
sequence, and the release that fixed it loses none to the same sequence."""

from __future__ import annotations

from kchaos.catalog import catalog, load
from kchaos.pipeline import run_and_check


def test_kafka_7128_loses_acknowledged_writes_on_2_0_0_and_none_on_2_0_1(tmp_path):
    affected, fixed = load(catalog()["kafka7128-stale-hw-isr-join"])
    assert (affected.kafka.version, fixed.kafka.version) == ("2.0.0", "2.0.1")
    bad = run_and_check(affected, tmp_path / "runs").result
    assert bad.facts.ops == {"fired": 1}, bad.unknown_because
    assert bad.verdict == "false" and bad.forbidden.get("lost-write", 0) > 0, (bad.counts, bad.unknown_because)
    good = run_and_check(fixed, tmp_path / "runs").result
    assert good.facts.ops == {"fired": 1}, good.unknown_because
    assert good.verdict == "true" and good.counts["lost-write"] == 0, (good.forbidden, good.unknown_because)
