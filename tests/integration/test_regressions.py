"""Known Kafka bugs on real brokers: the release that had the bug breaks its guarantee under the
bug's fault sequence (acknowledged writes lost, replicas diverged, a group's offsets gone), and the
release that fixed it keeps it under the same one."""

from __future__ import annotations

import pytest

from contracts.results import Badge
from kchaos.catalog import catalog, load
from runloop.check import run_and_check

# make test-all only: each known bug on its affected and fixed releases
pytestmark = pytest.mark.slow


# Each bug shows as its scenario's `regression.shows` anomalies, forbidden, on the release that had
# it (KNOWN BUG), and not on the one that fixed it. KIP-101's truncation shows as lost writes when
# every replica lacks the dropped records, and as one offset holding two values when a restarted
# replica still has them (DETECTION.md).
@pytest.mark.parametrize(("scenario", "versions", "ops"), [
    ("kafka7128-stale-hw-isr-join", ("2.0.0", "2.0.1"), 1),
    ("kip279-fast-failover-divergence", ("1.1.1", "2.0.0"), 1),
    ("kafka13636-offsets-expire-in-rebalance", ("3.1.0", "3.1.1"), 2),
    ("kip101-hw-truncation", ("0.10.2.2", "0.11.0.3"), 1),
    ("kafka20732-tiered-retention-fresh-leader", ("4.3.1", "4.3.2"), 1),
])
def test_the_bug_shows_on_the_release_that_had_it_and_not_on_the_one_that_fixed_it(
        tmp_path, scenario, versions, ops):
    affected, fixed = load(catalog()[scenario])
    assert (affected.kafka.version, fixed.kafka.version) == versions
    bad = run_and_check(affected, tmp_path / "runs").result
    assert bad.facts.ops == {"fired": ops}, "\n".join(bad.unknown_because)
    assert bad.badge is Badge.KNOWN_BUG, "\n".join([str(bad.counts), *bad.unknown_because])
    good = run_and_check(fixed, tmp_path / "runs").result
    assert good.facts.ops == {"fired": ops}, "\n".join(good.unknown_because)
    assert good.verdict is True and not any(good.counts[a]
                                            for a in affected.regression.shows), "\n".join(
        [str(good.forbidden), *good.unknown_because])
