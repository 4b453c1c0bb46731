"""Debian packages on the host (as root), for the Docker engine, debootstrap and the browser the
report test uses."""

from __future__ import annotations

import os
import subprocess


def apt_install(*packages: str, error: type[Exception] = RuntimeError) -> None:
    """Refresh the package lists, then install; a failure raises `error` naming the command and
    apt's last words."""
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", *packages]):
        done = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if done.returncode != 0:
            raise error(f"`{' '.join(cmd)}` failed (exit {done.returncode}): "
                        f"{done.stderr.strip()[-600:]}")
