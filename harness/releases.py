"""Another Kafka release on a broker in place, as an operator's rolling upgrade installs it: its
jars beside the image's, its data left where it is, and the feature levels finalized after."""

from __future__ import annotations

import functools
import io
import tarfile

from contracts.errors import ClusterError
from contracts.versions import release
from harness.jars import fetch_jars

HOME = "/opt/kafka"
RELEASE_FILE = "release"  # in HOME: the libs directory start.sh puts on the classpath
TOOL_JVM = "-Xmx128m -XX:TieredStopAtLevel=1"
FEATURES = "org.apache.kafka.tools.FeatureCommand --bootstrap-server localhost:9092"
# finalizing kraft.version turns a static quorum into a dynamic one for good (KAFKA-21426):
# quorum changes are a fault of their own, never a side effect of an upgrade
LEFT_AS_IS = frozenset({"kraft.version"})


@functools.cache
def archive(version: str) -> bytes:
    """A tar, to unpack in HOME, of a release's jars under releases/<version>/libs and the file
    that makes start.sh use them."""
    libs = fetch_jars(version)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for jar in sorted(libs.iterdir()):
            tar.add(jar, arcname=f"releases/{version}/libs/{jar.name}")
        pointer = f"{HOME}/releases/{version}/libs".encode()
        info = tarfile.TarInfo(RELEASE_FILE)
        info.size = len(pointer)
        tar.addfile(info, io.BytesIO(pointer))
    return buf.getvalue()


def install(container, version: str) -> None:
    """Put a release's jars in a (stopped) broker's container; its next start runs them."""
    if not container.put_archive(HOME, archive(version)):
        raise ClusterError(f"the engine did not install Kafka {version} in {container.name}")


def finalize_script(version: str) -> str:
    """A shell script, run in a broker on `version`, that raises every feature to the level the
    release gives it (metadata.version alone before 4.0), then prints `level NAME=N` for each."""
    java = f'java {TOOL_JVM} -cp "$(cat {HOME}/{RELEASE_FILE})/*"'
    if release(version) < (4, 0):
        levels = f"echo metadata.version={'.'.join(version.split('.')[:2])}"
        upgrade = f"{java} {FEATURES} upgrade --metadata ${{levels#*=}}"
    else:
        skip = "|".join(LEFT_AS_IS)
        levels = (f"{java} org.apache.kafka.tools.FeatureCommand version-mapping | sed -n "
                  f"'s/^\\([a-z.]*=[0-9]*\\).*/\\1/p' | grep -Ev '^({skip})='")
        upgrade = f"{java} {FEATURES} upgrade $(printf -- '--feature %s ' $levels)"
    return (f"set -e\nlevels=$({levels})\n"
            f"out=$({upgrade} 2>&1) || {{ echo \"$out\"; exit 1; }}\n"
            "printf 'level %s\\n' $levels")


def parse_levels(out: str) -> dict[str, str]:
    """The `level NAME=N` lines a finalize script printed."""
    levels = dict(line[6:].split("=", 1) for line in out.splitlines()
                  if line.startswith("level ") and "=" in line)
    if not levels:
        raise ClusterError(f"finalizing the feature levels printed no level:\n{out[-2000:]}")
    return levels
