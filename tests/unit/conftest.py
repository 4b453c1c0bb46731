"""Unit-test fixtures: validation plans with the assumed broker restart time, never this machine's
measured ones."""

from __future__ import annotations

import pytest

from contracts import measured


@pytest.fixture(autouse=True)
def assumed_restarts(tmp_path, monkeypatch):
    """Pace checks see no measured restarts: the integration tests, run first, add this machine's to
    the cache, and a unit test's verdict must not depend on them."""
    monkeypatch.setattr(measured, "_file", lambda: tmp_path / "restart-seconds.json")
