"""The JRE base images Kafka images build on: Debian with one pinned OpenJDK, made by debootstrap +
`docker import`."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import docker
import docker.errors

from contracts.describe import progress
from contracts.errors import ImageError
from harness.apt import apt_install

DEBIAN_MIRROR = os.environ.get("KCHAOS_DEBIAN_MIRROR", "http://deb.debian.org/debian")
TOOLS = ("iproute2", "iptables", "procps", "ca-certificates")
# A suite's Release file may be past its Valid-Until on a mirror that is a snapshot; the packages
# are still signed.
LABEL = "org.kafka-chaos.jre"
APT = ("apt-get", "-o", "Acquire::Check-Valid-Until=false", "-y", "-qq", "--no-install-recommends")


@dataclass(frozen=True)
class Jre:
    """One OpenJDK major from a Debian suite, at a pinned package version."""

    java: int
    suite: str
    version: str

    @property
    def package(self) -> str:
        return f"openjdk-{self.java}-jre-headless"

    @property
    def pin(self) -> str:
        return f"{self.package}={self.version}"

    @property
    def label(self) -> str:
        return f"{self.pin} (Debian {self.suite})"

    @property
    def tag(self) -> str:
        return os.environ.get(f"KCHAOS_JRE{self.java}_IMAGE", f"kafka-chaos/jre:{self.java}")


# Bookworm carries 17; only sid still carries 8 and 11 (for Kafka before 3.1 and 2.1).
JRES = {
    17: Jre(17, "bookworm", "17.0.19+10-1~deb12u2"),
    11: Jre(11, "sid", "11.0.33~8ea-1"),
    8: Jre(8, "sid", "8u504-ga-1"),
}


def _client() -> docker.DockerClient:
    return docker.from_env(timeout=300)


def _run(cmd: list[str], what: str, **kw) -> None:
    done = subprocess.run(cmd, capture_output=True, text=kw.get("stdin") is None, **kw)
    if done.returncode != 0:
        err = done.stderr if isinstance(done.stderr, str) else done.stderr.decode(errors="replace")
        raise ImageError(f"{what} failed (exit {done.returncode}): {err.strip()[-800:]}")


def ensure_jre_image(java: int, say=progress) -> str:
    """The base image of an OpenJDK major, built once (about a minute) when missing."""
    jre = JRES[java]
    given = f"KCHAOS_JRE{java}_IMAGE" in os.environ  # a local image used as it is
    try:
        image = _client().images.get(jre.tag)
        if given or image.labels.get(LABEL) == jre.label:
            return jre.tag
    except docker.errors.ImageNotFound:
        if given:
            raise ImageError(f"Image {jre.tag} (from KCHAOS_JRE{java}_IMAGE) is not present "
                             f"locally; load it first or unset KCHAOS_JRE{java}_IMAGE to build the "
                             "pinned one") from None
    if shutil.which("debootstrap") is None:
        apt_install("debootstrap", error=ImageError)
    say(f"Building base image {jre.tag} ({jre.pin}, Debian {jre.suite}) with debootstrap (about a "
        "minute, once)...")
    with tempfile.TemporaryDirectory(prefix="kchaos-rootfs-") as tmp:
        root = Path(tmp) / "rootfs"
        _run(["debootstrap", "--variant=minbase", f"--include={','.join(TOOLS)}", jre.suite,
              str(root), DEBIAN_MIRROR], "debootstrap")
        _install_pinned(root, jre)
        # nft-backed iptables needs modules a container may lack; the legacy backend works
        # everywhere.
        _run(["chroot", str(root), "update-alternatives", "--set", "iptables",
              "/usr/sbin/iptables-legacy"],
             "selecting iptables-legacy")
        for junk in ("var/cache/apt/archives", "var/lib/apt/lists", "usr/share/doc",
                     "usr/share/man"):
            shutil.rmtree(root / junk, ignore_errors=True)
        label = f"LABEL {LABEL}=\"{jre.label}\""
        tar = subprocess.Popen(["tar", "-C", str(root), "-c", "."], stdout=subprocess.PIPE)
        _run(["docker", "import", "-c", "ENV LANG=C.UTF-8", "-c", label, "-", jre.tag],
             "docker import", stdin=tar.stdout)
        tar.wait()
    return jre.tag


def _install_pinned(root: Path, jre: Jre) -> None:
    """apt-get the pinned JRE inside the new root (its postinst runs java, which needs /proc)."""
    shutil.copy("/etc/resolv.conf", root / "etc" / "resolv.conf")
    _run(["mount", "-t", "proc", "proc", str(root / "proc")], "mounting /proc in the new root")
    try:
        _run(["chroot", str(root), *APT[:3], "update"], f"apt-get update ({jre.suite})")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        done = subprocess.run(["chroot", str(root), *APT, "install", jre.pin], capture_output=True,
                              text=True, env=env)
        if done.returncode != 0:
            raise ImageError(f"apt-get install {jre.pin} (Debian {jre.suite}) failed: "
                             f"{done.stderr.strip()[-300:]}. If the archive no longer offers that "
                             f"version, set JRES[{jre.java}] in harness/jre.py to one `apt-cache "
                             f"policy {jre.package}` lists")
    finally:
        subprocess.run(["umount", "-l", str(root / "proc")], capture_output=True)
