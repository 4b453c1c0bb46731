"""Kafka's jars from Maven Central: which releases it has, the stock runtime jars of one, and the
config names that release defines. Nothing here needs the Docker engine."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import urllib.error
import urllib.request
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from contracts.describe import progress
from contracts.errors import ImageError, UsageError
from contracts.paths import cache_dir
from contracts.versions import DEFAULT_VERSION, OLDEST, VERSION_RE, release

CENTRAL = "https://repo1.maven.org/maven2"
# The broker is published per Scala build; the newest Scala a release has is taken (2.13 from 2.4,
# 2.12 from 0.10.1, 2.11 before). kafka-tools (ProducerPerformance, for `make bench`) is added where
# a release has it.
BROKER_ARTIFACTS = ("kafka_2.13", "kafka_2.12", "kafka_2.11")
TOOLS_ARTIFACT = "kafka-tools"

@cache
def central_versions(artifact: str) -> tuple[str, ...]:
    """Versions Maven Central lists for org.apache.kafka:<artifact>."""
    url = f"{CENTRAL}/org/apache/kafka/{artifact}/maven-metadata.xml"
    try:
        with urllib.request.urlopen(url, timeout=30) as resp:
            text = resp.read().decode()
    except (urllib.error.URLError, TimeoutError) as exc:
        raise ImageError(f"Maven Central did not answer for {artifact} ({url}): {exc}") from exc
    return tuple(re.findall(r"<version>([^<]+)</version>", text))


def broker_artifact(version: str) -> str | None:
    """The newest Scala build of the broker Maven Central has for a version, or None."""
    return next((a for a in BROKER_ARTIFACTS if version in central_versions(a)), None)


def available_versions() -> list[str]:
    """Every release on Maven Central the harness can run (0.10.2 and newer), oldest first."""
    seen = {v for a in BROKER_ARTIFACTS for v in central_versions(a)}
    return sorted((v for v in seen if VERSION_RE.match(v) and release(v) >= OLDEST), key=release)


def nearest(version: str, known: list[str], n: int = 3) -> list[str]:
    """The `n` known versions closest to `version` (same major and minor first), in version
    order."""
    want = release(version) + (0,) * 4

    def distance(v: str) -> tuple[int, ...]:
        have = release(v) + (0,) * 4
        return tuple(abs(a - b) for a, b in zip(want[:4], have[:4], strict=True))
    return sorted(sorted(known, key=distance)[:n], key=release)


def check_version(version: str, field: str = "--kafka", tiered: bool = False) -> None:
    """Raise one clear error unless the harness can run this Kafka version (its jars are on Maven
    Central, or cached here; with `tiered`, a remote tier plugin too); `field` is where the user
    wrote the version."""
    if not VERSION_RE.match(version):
        raise UsageError(f"Expected a Kafka version like '{DEFAULT_VERSION}' but got "
                         f"{field}={version!r}")
    if (cache_dir() / "kafka" / version / ".complete").exists() or (
            release(version) >= OLDEST and broker_artifact(version)):
        if tiered:
            tiered_plugin(version, field=field)
        return
    close = ", ".join(nearest(version, available_versions()))
    why = ("is older than 0.10.2, the oldest the harness runs" if release(version) < OLDEST
           else "is not on Maven Central (no "
                f"org.apache.kafka:{{{','.join(BROKER_ARTIFACTS)}}}:{version})")
    raise UsageError(f"Kafka {version} {why} ({field}={version!r}). Nearest supported: {close}; "
                     "`kchaos images list --available` lists all.")


@dataclass(frozen=True)
class Artifact:
    """A Maven coordinate."""

    group: str
    name: str
    version: str

    def xml(self) -> str:
        return (f"<dependency><groupId>{self.group}</groupId><artifactId>{self.name}</artifactId>"
                f"<version>{self.version}</version></dependency>")


def _pom(artifacts: list[Artifact]) -> str:
    deps = "\n".join(a.xml() for a in artifacts)
    return ("<project "
            f"xmlns=\"http://maven.apache.org/POM/4.0.0\"><modelVersion>4.0.0</modelVersion><groupId>kafka-chaos</groupId><artifactId>kafka-libs</artifactId><version>1</version><dependencies>\n{deps}\n</dependencies></project>\n")


def _copy_dependencies(work: Path, artifacts: list[Artifact], libs: Path) -> None:
    (work / "pom.xml").write_text(_pom(artifacts))
    done = subprocess.run(["mvn", "-q", "-B", "dependency:copy-dependencies",
                           "-DincludeScope=runtime",
                           f"-DoutputDirectory={libs}"], cwd=work, capture_output=True, text=True)
    if done.returncode != 0:
        errors = [ln for ln in done.stdout.splitlines() if "[ERROR]" in ln][:2]
        raise ImageError("Maven could not resolve "
                         + ", ".join(f"{a.name}:{a.version}" for a in artifacts)
                         + ":\n" + "\n".join(errors))


def _jar_version(libs: Path, name: str) -> str | None:
    for jar in libs.glob(f"{name}-*.jar"):
        rest = jar.name[len(name) + 1:-4]
        if rest[:1].isdigit():
            return rest
    return None


def logging_binding(libs: Path) -> list[Artifact]:
    """The SLF4J binding the broker POM leaves out: log4j2 for 4.x (log4j-core present), reload4j
    for 3.x; before 3.x ZooKeeper's POM brings slf4j-log4j12."""
    bound = ("slf4j-reload4j-*.jar", "log4j-slf4j*-impl-*.jar", "slf4j-log4j12-*.jar")
    if any(any(libs.glob(b)) for b in bound):
        return []
    slf4j = _jar_version(libs, "slf4j-api") or "1.7.36"
    log4j2 = _jar_version(libs, "log4j-core")
    if log4j2:
        impl = "log4j-slf4j2-impl" if slf4j.startswith("2.") else "log4j-slf4j-impl"
        return [Artifact("org.apache.logging.log4j", impl, log4j2)]
    return [Artifact("ch.qos.reload4j", "reload4j", "1.2.25"),
            Artifact("org.slf4j", "slf4j-reload4j", slf4j)]


def fetch_jars(version: str, say=progress) -> Path:
    """Kafka <version>'s stock runtime jars from Maven Central, plus a logging binding; cached per
    version."""
    home = cache_dir() / "kafka" / version
    libs = home / "libs"
    if (home / ".complete").exists():
        return libs
    check_version(version)
    broker = broker_artifact(version)
    assert broker is not None
    say(f"Fetching Kafka {version} jars ({broker}) from Maven Central...")
    shutil.rmtree(libs, ignore_errors=True)
    libs.mkdir(parents=True)
    names = [broker, *([TOOLS_ARTIFACT] if version in central_versions(TOOLS_ARTIFACT) else [])]
    _copy_dependencies(home, [Artifact("org.apache.kafka", a, version) for a in names], libs)
    binding = logging_binding(libs)
    if binding:
        _copy_dependencies(home, binding, libs)
    (home / ".complete").write_text(f"org.apache.kafka:{broker}:{version}")
    return libs


# Kafka's own remote tier on a directory (its tiered storage tests use it), in the kafka-storage
# test jar, or from 4.4 its test-fixtures jar (4.4's test jar holds only the tests). A release
# Central has neither of runs the newest older one's of the same minor release: the plugin uses
# client classes that move between minor releases (4.4 moved LogContext).
TIERED_PLUGIN = "org.apache.kafka.server.log.remote.storage.LocalTieredStorage"
TIERED_CLASS = TIERED_PLUGIN.replace(".", "/") + ".class"
STORAGE_ARTIFACT = "kafka-storage"
TEST_CLASSIFIERS = ("test", "test-fixtures")


def _carries_plugin(jar: Path) -> bool:
    """Whether a jar here holds LocalTieredStorage's class."""
    try:
        with zipfile.ZipFile(jar) as z:
            return TIERED_CLASS in z.namelist()
    except (OSError, zipfile.BadZipFile):
        return False


def _storage_jar(version: str, classifier: str, say) -> Path | None:
    """A release's kafka-storage jar of `classifier`, fetched once; None if Central lacks it."""
    jar = cache_dir() / "tiered" / version / f"{STORAGE_ARTIFACT}-{version}-{classifier}.jar"
    if jar.is_file():
        return jar
    url = f"{CENTRAL}/org/apache/kafka/{STORAGE_ARTIFACT}/{version}/{jar.name}"
    try:
        with urllib.request.urlopen(url, timeout=120) as resp:
            data = resp.read()
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return None
        raise ImageError(f"Maven Central answered {exc.code} for {url}") from exc
    except (urllib.error.URLError, TimeoutError) as exc:
        raise ImageError(f"Maven Central did not answer for {url}: {exc}") from exc
    say(f"Fetched {jar.name}, looking for Kafka's LocalTieredStorage")
    jar.parent.mkdir(parents=True, exist_ok=True)
    tmp = jar.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_bytes(data)
    tmp.replace(jar)
    return jar


def tiered_plugin(version: str, say=progress, field: str = "kafka.version") -> Path:
    """The kafka-storage jar that carries LocalTieredStorage for a release: its own, or the newest
    older release's; cached, with which one a release takes."""
    chosen = cache_dir() / "tiered" / f"{version}.jar"
    if chosen.is_file() and _carries_plugin(cached := Path(chosen.read_text())):
        return cached
    older = sorted((v for v in central_versions(STORAGE_ARTIFACT) if VERSION_RE.match(v)
                    and release(v)[:2] == release(version)[:2] and release(v) <= release(version)),
                   key=release, reverse=True)
    jar = next((j for v in older for c in TEST_CLASSIFIERS
                if (j := _storage_jar(v, c, say)) and _carries_plugin(j)), None)
    if jar is None:
        minor = ".".join(version.split(".")[:2])
        raise UsageError(f"{field}={version!r}: Maven Central has no kafka-storage jar with "
                         f"Kafka's LocalTieredStorage for Kafka {version} or an older {minor} "
                         "release, so topic.remote_storage=true cannot run on it; use another "
                         "release")
    chosen.write_text(str(jar))
    return jar


JAVA_DIR = Path(__file__).parent / "java"
CLIENTS_ARTIFACT = "kafka-clients"


def check_client_version(version: str, field: str) -> None:
    """Raise one clear error unless Maven Central (or the cache here) has kafka-clients
    <version>."""
    if (cache_dir() / CLIENTS_ARTIFACT / version / ".complete").exists() or (
            version in central_versions(CLIENTS_ARTIFACT)):
        return
    close = ", ".join(nearest(version, [v for v in central_versions(CLIENTS_ARTIFACT)
                                        if VERSION_RE.match(v)]))
    raise UsageError(f"{field}: Maven Central has no org.apache.kafka:{CLIENTS_ARTIFACT}:"
                     f"{version}; nearest: {close}")


def client_jars(version: str, say=progress) -> Path:
    """kafka-clients <version>, its runtime dependencies and SLF4J's simple binding from Maven
    Central; cached per version."""
    home = cache_dir() / CLIENTS_ARTIFACT / version
    if not (home / ".complete").exists():
        say(f"Fetching kafka-clients {version} from Maven Central...")
        shutil.rmtree(home / "libs", ignore_errors=True)
        (home / "libs").mkdir(parents=True)
        _copy_dependencies(home, [Artifact("org.apache.kafka", CLIENTS_ARTIFACT, version)],
                           home / "libs")
        # the client logs to stderr (the worker's log file) through SLF4J's simple binding
        slf4j = _jar_version(home / "libs", "slf4j-api") or "1.7.36"
        _copy_dependencies(home, [Artifact("org.slf4j", "slf4j-simple", slf4j)], home / "libs")
        (home / ".complete").write_text(f"org.apache.kafka:{CLIENTS_ARTIFACT}:{version}")
    return home / "libs"


@dataclass(frozen=True)
class ConfigNames:
    """The broker and topic config names a Kafka version defines (from its own ConfigDefs)."""

    broker: frozenset[str]
    topic: frozenset[str]


def config_names(version: str, say=progress) -> ConfigNames:
    """A version's config names, listed once by harness/java/ConfigNames.java run against its jars
    (fetched if need be) and kept beside them."""
    listed = cache_dir() / "kafka" / version / "config-names.txt"
    if not listed.is_file():
        libs = fetch_jars(version, say)
        done = subprocess.run(["java", "-cp", f"{libs}/*", str(JAVA_DIR / "ConfigNames.java")],
                              capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise ImageError(f"Listing Kafka {version}'s config names failed: "
                             f"{done.stderr.strip()[-400:]}")
        tmp = listed.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(done.stdout)
        tmp.replace(listed)
    rows = [line.split(" ", 1) for line in listed.read_text().splitlines() if " " in line]
    return ConfigNames(frozenset(n for k, n in rows if k == "broker"),
                       frozenset(n for k, n in rows if k == "topic"))


def worker_classpath(version: str, sources: Sequence[Path], say=progress) -> str:
    """The classpath of Java sources (the workload's Java worker, from each folder of `sources`)
    compiled against kafka-clients <version>: built once per release and sources digest, and cached
    beside those jars."""
    libs = client_jars(version, say)
    files = sorted(f for folder in sources for f in folder.glob("*.java"))
    digest = hashlib.sha256(b"".join(f.read_bytes() for f in files)).hexdigest()[:16]
    classes = cache_dir() / CLIENTS_ARTIFACT / version / f"worker-{digest}"
    if not classes.is_dir():
        tmp = classes.with_name(f"{classes.name}.{os.getpid()}.tmp")
        done = subprocess.run(["javac", "-nowarn", "-cp", f"{libs}/*", "-d", str(tmp),
                               *map(str, files)], capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise ImageError(f"Compiling {sources[0]} against kafka-clients {version} failed: "
                             f"{done.stderr.strip()[-400:]}")
        tmp.replace(classes)
    return f"{libs}/*:{classes}"
