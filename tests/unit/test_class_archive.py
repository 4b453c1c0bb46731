"""A damaged class archive never stops an analysis: the session starts without it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from reports import class_archive

START = """
import sys
from pathlib import Path
from reports import class_archive
from reports.spark import session
archive = class_archive.path()
archive.parent.mkdir(parents=True)
archive.write_bytes(Path(sys.argv[1]).read_bytes())
print("rows", session(driver_memory="1g").range(3).count(), "kept", archive.exists())
"""


@pytest.mark.parametrize("damage", [pytest.param("garbage", marks=pytest.mark.slow), "truncated"])
def test_a_damaged_class_archive_does_not_stop_spark(tmp_path, damage):
    built = class_archive.path()
    if damage == "truncated" and not built.is_file():
        pytest.skip("no class archive to truncate: `kchaos setup` builds it")
    # a truncated archive crashes the JVM that maps it; garbage is refused
    bad = tmp_path / "bad.jsa"
    if damage == "truncated":
        with built.open("rb") as whole:
            bad.write_bytes(whole.read(1_000_000))
    else:
        bad.write_bytes(b"not an archive" * 5000)
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "KCHAOS_CACHE": str(tmp_path / "cache"), "PYTHONPATH": str(root),
           "TMPDIR": str(tmp_path)}  # where the crashing JVM writes its report
    env.pop("KCHAOS_SPARK_JAVA_OPTIONS", None)
    done = subprocess.run([sys.executable, "-c", START, str(bad)], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert "rows 3" in done.stdout, done.stderr[-2000:]
    if damage == "truncated":
        # dropped, so the next session does not crash on it again
        assert "kept False" in done.stdout


def test_each_pyspark_install_has_its_own_archive(monkeypatch, tmp_path):
    """A JVM refuses an archive dumped with another class path, e.g. another clone's venv."""
    here = class_archive.path()
    monkeypatch.setattr(class_archive.pyspark, "__file__",
                        str(tmp_path / "other-venv" / "pyspark" / "__init__.py"))
    class_archive.path.cache_clear()
    try:
        assert class_archive.path() != here
    finally:
        monkeypatch.undo()
        class_archive.path.cache_clear()
