"""The warm-up a run starts beside its workload, and `kchaos setup` trains the class archive with,
really analyzes a small history and draws its timeline (its errors are swallowed by design)."""

from __future__ import annotations

from reports.warmup import analyze_small


def test_the_warm_up_analyzes_a_small_history_and_draws_its_timeline(spark):
    analyze_small(spark)
