"""The Spark driver JVM's class-data archive (AppCDS), built once by `kchaos setup` from a small
analysis (`reports.archive_train`); it halves a session's start (BENCHMARKS.md). A JVM given a
truncated archive crashes, so it is built aside and renamed into place whole.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pyspark

from contracts.paths import cache_dir

BUILD_TIMEOUT_S = 600


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    return str(Path(home) / "bin" / "java") if home else "java"


@cache
def path() -> Path:
    """Where the archive lives: one per pyspark install and JDK build, since a JVM accepts only an
    archive dumped by its own build with the same class path (pyspark's jars, found where pyspark is
    installed: each clone's venv)."""
    try:
        version = subprocess.run([_java(), "-version"], capture_output=True, text=True,
                                 timeout=60).stderr
    except OSError:  # no JVM at all: Spark itself reports that when a session starts
        version = "no java"
    jars = Path(pyspark.__file__).resolve().parent / "jars"
    key = hashlib.sha256(f"{pyspark.__version__}\n{jars}\n{version}".encode()).hexdigest()[:12]
    return cache_dir() / f"spark-classes-{key}.jsa"


def option() -> str:
    """The JVM options that use the archive (a crash report, should it fail, goes to the temp
    directory, not the working one), or "" before `kchaos setup` built it."""
    p = path()
    crash = Path(tempfile.gettempdir()) / "kchaos-spark-hs_err_%p.log"
    return f"-XX:SharedArchiveFile={p} -XX:ErrorFile={crash}" if p.is_file() else ""


def ensure(say: Callable[[str], None]) -> None:
    """Build the archive unless it exists: a subprocess analyzes a small history and its JVM dumps
    the classes it loaded as it exits. Without it Spark only starts slower, so a failed build is
    said, not raised."""
    target = path()
    if target.is_file():
        return
    say("Building the Spark driver's class archive (once, about a minute)...")
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(f".partial-{os.getpid()}")
    try:
        done = subprocess.run([sys.executable, "-m", "reports.archive_train", str(partial)],
                              capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
        if done.returncode == 0 and partial.is_file():
            partial.replace(target)
        else:
            tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
            say(f"The Spark class archive was not built ({tail}); analyses start without it, only "
                "slower.")
    except subprocess.TimeoutExpired:
        say(f"The Spark class archive was not built within {BUILD_TIMEOUT_S} s; analyses start "
            "without it.")
    finally:
        partial.unlink(missing_ok=True)
