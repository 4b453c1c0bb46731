"""Static Go helpers that run inside broker containers (lazyfs, netdelay): built from
harness/docker/<name> once per source digest, cached, and mounted into the containers read-only."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from contracts.describe import progress
from contracts.errors import ImageError
from contracts.paths import cache_dir

SOURCES = Path(__file__).parent / "docker"


def binary(name: str, purpose: str, say=progress) -> Path:
    """The executable for harness/docker/`name`'s current sources, built on first use (CGO off, so
    static)."""
    source = SOURCES / name
    digest = hashlib.sha256(b"".join(p.read_bytes()
                                     for p in sorted(source.iterdir()))).hexdigest()[:12]
    out = cache_dir() / name / digest / name
    if out.exists():
        return out
    if shutil.which("go") is None:
        raise ImageError(f"Go is needed to build {name}, {purpose}; install it (apt-get install "
                         "golang-go) or leave that fault out of the scenario")
    say(f"Building {name}, {purpose} (once)...")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(f".{os.getpid()}")
    done = subprocess.run(["go", "build", "-trimpath", "-o", str(tmp), "."], cwd=source,
                          capture_output=True, text=True, env=os.environ | {"CGO_ENABLED": "0"})
    if done.returncode != 0:
        raise ImageError(f"building {name} failed (exit {done.returncode}): "
                         f"{done.stderr.strip()[-800:]}")
    tmp.rename(out)
    return out
