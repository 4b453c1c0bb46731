"""Shared fixtures: one Spark session for the whole test run."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("KCHAOS_SPARK_PARTITIONS", "2")  # tiny histories: fewer tasks per shuffle


@pytest.fixture(scope="session")
def spark():
    from reports.spark import session

    s = session(driver_memory="2g")
    yield s
    s.stop()
