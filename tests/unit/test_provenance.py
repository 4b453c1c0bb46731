"""A result names the commit it ran from; only a change to code, not to docs/, marks it dirty."""

from __future__ import annotations

import subprocess

from contracts.provenance import commit_of


def _git(top, *args):
    subprocess.run(["git", "-C", str(top), *args], check=True, capture_output=True)


def test_a_change_under_docs_leaves_the_commit_clean_and_a_code_change_marks_it(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "shards.log").write_text("1: 5 runs\n")
    (tmp_path / "run.py").write_text("x = 1\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c")
    head = subprocess.run(["git", "-C", str(tmp_path), "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()
    (tmp_path / "docs" / "shards.log").write_text("1: 5 runs\n2: 5 runs\n")
    assert commit_of(tmp_path) == head
    (tmp_path / "run.py").write_text("x = 2\n")
    assert commit_of(tmp_path) == head + "+dirty"
    assert commit_of(tmp_path / "docs" / "absent") == "unknown"
