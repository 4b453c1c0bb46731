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
    yield s
    s.stop()
