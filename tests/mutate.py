"""Mutation testing of the checkers and rules: each curated mutant (tests/mutations.py) is applied
to a copy of the repository, and the test it names as its killer must fail. Usage: python -m
tests.mutate [-k WORDS]. A mutant its killer misses runs the fast analyzer tests, which name the
test to write down or show it survived. The mutants run one after another in this process, so they
share one Spark JVM and its compiled code."""

from __future__ import annotations

import argparse
import ast
import contextlib
import io
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.mutations import MUTATIONS, Mutation

ROOT = Path(__file__).resolve().parents[1]
# The fast analyzer tests a mutant of each file runs when its named killer misses it (ordered by
# _suspects); the first failure ends the run (-x).
CHECKS = ["tests/unit/test_checker_precision.py", "tests/unit/test_analysis.py",
          "tests/unit/test_txn_checkers.py", "tests/unit/test_eos_checkers.py",
          "tests/unit/test_oracle.py"]
PROJECT = {"contracts", "harness", "faults", "workloads", "reports", "kchaos", "bench", "tests"}
RULES = ["tests/unit/test_guarantees.py", "tests/unit/test_badges.py", *CHECKS]
SHARE = ["tests/unit/test_share_checks.py"]
KILLERS = {"reports/checkers.py": [*CHECKS, "tests/unit/test_guarantees.py"],
           "reports/guarantees.py": RULES, "reports/exposure.py": RULES,
           "reports/verdict.py": RULES, "reports/share_checks.py": SHARE,
           "reports/share_frames.py": SHARE}


def _copy() -> Path:
    """The tracked and untracked files of the working tree, without .git, the venv or caches."""
    dest = Path(tempfile.mkdtemp(prefix="kchaos-mutant-"))
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout.split()
    for name in listed:
        if (ROOT / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)
    return dest


def _apply(copy: Path, m: Mutation, original: str) -> None:
    if original.count(m.old) != 1:
        raise SystemExit(f"mutation {m.what!r}: its text occurs {original.count(m.old)} times in "
                         f"{m.path}, not once")
    (copy / m.path).write_text(original.replace(m.old, m.new))


class _FirstFailure:
    """A pytest plugin that keeps the node id of the first test that failed."""

    def __init__(self) -> None:
        self.nodeid = ""

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.failed and not self.nodeid:
            self.nodeid = report.nodeid


def _killer(tests: list[str]) -> str:
    """The first of these tests to fail, or "" when all pass. Every module of the copy is imported
    afresh: the project's packages, and the test modules and conftest files pytest imported by their
    file names."""
    root = str(Path.cwd())
    for name, module in list(sys.modules.items()):
        where = getattr(module, "__file__", None) or ""
        if name.split(".")[0] in PROJECT or where.startswith(root):
            del sys.modules[name]
    failure = _FirstFailure()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = pytest.main(["-x", "-q", "-p", "no:cacheprovider", "-m", "not slow", *tests],
                           plugins=[failure])
    if code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        raise SystemExit(f"pytest could not run {' '.join(tests)}: exit code {code}")
    return failure.nodeid


def _suspects(m: Mutation) -> list[str]:
    """The tests of the mutated file's killer list, those that name the mutant's anomaly (or rule)
    first, so a mutant its named killer misses costs a few tests, not the whole list."""
    subject = m.what.split(":")[0]
    words = {subject, subject.replace("-", "_"), subject.split()[0]}
    first, rest = [], []
    for path in KILLERS[m.path]:
        source = Path(path).read_text()
        for node in ast.parse(source).body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                text = ast.get_source_segment(source, node) or ""
                (first if any(w in text for w in words) else rest).append(f"{path}::{node.name}")
    return first + rest


def _judge(m: Mutation) -> str:
    """How the mutant died: by its named killer, by another test (its name is then wrong), or not at
    all."""
    if m.killer and _killer([m.killer]):
        return "killed"
    other = _killer(_suspects(m))
    if not other:
        return "SURVIVED"
    return f"killed by {other}, which is not its named killer {m.killer or '(none)'}: name it"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-k", default="",
                        help="only the mutations whose description contains these words")
    chosen = [m for m in MUTATIONS if parser.parse_args().k in m.what]
    copy, survivors, started = _copy(), [], time.monotonic()
    os.chdir(copy)
    sys.path.insert(0, str(copy))
    # a mutant of the same size written within a second must not hit a stale .pyc
    sys.dont_write_bytecode = True
    try:
        if failed := _killer(sorted({m.killer for m in chosen if m.killer})
                             or KILLERS["reports/checkers.py"]):
            raise SystemExit(f"{failed} fails without any mutant: fix it first")
        for i, m in enumerate(chosen, 1):
            original = (copy / m.path).read_text()
            _apply(copy, m, original)
            t0 = time.monotonic()
            outcome = _judge(m)
            (copy / m.path).write_text(original)
            print(f"[{i}/{len(chosen)}] {outcome} in {time.monotonic() - t0:.0f} s: {m.path}: "
                  f"{m.what}", flush=True)
            survivors += [] if outcome == "killed" else [m]
    finally:
        shutil.rmtree(copy, ignore_errors=True)
    print(f"{len(chosen) - len(survivors)} of {len(chosen)} mutants killed by their named tests "
          f"in {time.monotonic() - started:.0f} s")
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
