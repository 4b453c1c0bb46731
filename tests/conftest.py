"""Shared fixtures: one Spark session for the whole test run; Hypothesis without deadlines."""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

os.environ.setdefault("KCHAOS_SPARK_PARTITIONS", "2")  # tiny histories: fewer tasks per shuffle
# No per-example deadline: on a 2-core machine busy with a cluster, timing is not what a property
# test checks.
settings.register_profile("kchaos", deadline=None)
settings.load_profile("kchaos")


@pytest.fixture(scope="session")
def spark():
    from reports.spark import session

    # one JVM analyzes a few hundred histories: the long jobs' JIT compiler pays back after a dozen
    s = session(driver_memory="2g", large=True)
    # histories of a few rows: Spark's interpreted operators, compiled by the JIT once, beat
    # compiling generated classes for each new query; the CLI's own analyses (test_cli,
    # test_history_builder) keep the generated code that runs use
    s.conf.set("spark.sql.codegen.wholeStage", "false")
    s.conf.set("spark.sql.codegen.factoryMode", "NO_CODEGEN")
    yield s
    s.stop()
