"""Build and cache the images a cluster runs on: a Debian JRE base, and Kafka <version> from Maven Central."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import subprocess
import urllib.error
import urllib.request
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import docker
import docker.errors

from contracts.errors import ImageError, UsageError
from contracts.paths import cache_dir
from contracts.versions import DEFAULT_VERSION, OLDEST, VERSION_RE, java_for, release
from harness.jre import JRES, ensure_jre_image

IMAGE_REPO = "kafka-chaos/kafka"
CENTRAL = "https://repo1.maven.org/maven2"
# The broker is published per Scala build; the newest Scala a release has is taken (2.13 from 2.4, 2.12 from
# 0.10.1, 2.11 before). kafka-tools (ProducerPerformance, for `make bench`) is added where a release has it.
BROKER_ARTIFACTS = ("kafka_2.13", "kafka_2.12", "kafka_2.11")
TOOLS_ARTIFACT = "kafka-tools"
DOCKER_DIR = Path(__file__).parent / "docker"


def image_for(version: str) -> str:
    """The local image tag of a Kafka version (overridable, e.g. `apache/kafka:{version}`)."""
    return os.environ.get("KCHAOS_KAFKA_IMAGE", f"{IMAGE_REPO}:{{version}}").format(version=version)


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
    """The `n` known versions closest to `version` (same major and minor first), in version order."""
    want = release(version) + (0,) * 4

    def distance(v: str) -> tuple[int, ...]:
        have = release(v) + (0,) * 4
        return tuple(abs(a - b) for a, b in zip(want[:4], have[:4], strict=True))
    return sorted(sorted(known, key=distance)[:n], key=release)


def check_version(version: str, field: str = "--kafka") -> None:
    """Raise one clear error unless the harness can run this Kafka version (its jars are on Maven Central, or
    cached here); `field` is where the user wrote the version."""
    if not VERSION_RE.match(version):
        raise UsageError(f"Expected a Kafka version like '{DEFAULT_VERSION}' but got {field}={version!r}")
    if (cache_dir() / "kafka" / version / ".complete").exists():
        return
    if release(version) >= OLDEST and broker_artifact(version):
        return
    close = ", ".join(nearest(version, available_versions()))
    why = ("is older than 0.10.2, the oldest the harness runs" if release(version) < OLDEST
           else f"is not on Maven Central (no org.apache.kafka:{{{','.join(BROKER_ARTIFACTS)}}}:{version})")
    raise UsageError(f"Kafka {version} {why} ({field}={version!r}). Nearest supported: {close}; "
                     "`kchaos images list --available` lists all.")


def _client() -> docker.DockerClient:
    return docker.from_env(timeout=300)


def image_exists(tag: str) -> bool:
    """True when the image is present locally."""
    return _image(tag) is not None


def _image(tag: str):
    try:
        return _client().images.get(tag)
    except docker.errors.ImageNotFound:
        return None


def recipe(version: str) -> str:
    """A digest of the Dockerfile and the pinned JRE a version's image is built from: an image built from older
    ones is rebuilt."""
    made_of = (DOCKER_DIR / "Dockerfile").read_bytes() + JRES[java_for(version)].pin.encode()
    return hashlib.sha256(made_of).hexdigest()[:12]


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
    return ("<project xmlns=\"http://maven.apache.org/POM/4.0.0\"><modelVersion>4.0.0</modelVersion>"
            "<groupId>kafka-chaos</groupId><artifactId>kafka-libs</artifactId><version>1</version>"
            f"<dependencies>\n{deps}\n</dependencies></project>\n")


def _copy_dependencies(work: Path, artifacts: list[Artifact], libs: Path) -> None:
    (work / "pom.xml").write_text(_pom(artifacts))
    done = subprocess.run(["mvn", "-q", "-B", "dependency:copy-dependencies", "-DincludeScope=runtime",
                           f"-DoutputDirectory={libs}"], cwd=work, capture_output=True, text=True)
    if done.returncode != 0:
        errors = [ln for ln in done.stdout.splitlines() if "[ERROR]" in ln][:2]
        raise ImageError("Maven could not resolve " + ", ".join(f"{a.name}:{a.version}" for a in artifacts)
                         + ":\n" + "\n".join(errors))


def _jar_version(libs: Path, name: str) -> str | None:
    for jar in libs.glob(f"{name}-*.jar"):
        rest = jar.name[len(name) + 1:-4]
        if rest[:1].isdigit():
            return rest
    return None


def logging_binding(libs: Path) -> list[Artifact]:
    """The SLF4J binding the broker POM leaves out: log4j2 for 4.x (log4j-core present), reload4j for 3.x; before
    3.x ZooKeeper's POM brings slf4j-log4j12."""
    bound = ("slf4j-reload4j-*.jar", "log4j-slf4j*-impl-*.jar", "slf4j-log4j12-*.jar")
    if any(any(libs.glob(b)) for b in bound):
        return []
    slf4j = _jar_version(libs, "slf4j-api") or "1.7.36"
    log4j2 = _jar_version(libs, "log4j-core")
    if log4j2:
        impl = "log4j-slf4j2-impl" if slf4j.startswith("2.") else "log4j-slf4j-impl"
        return [Artifact("org.apache.logging.log4j", impl, log4j2)]
    return [Artifact("ch.qos.reload4j", "reload4j", "1.2.25"), Artifact("org.slf4j", "slf4j-reload4j", slf4j)]


def fetch_jars(version: str, say=print) -> Path:
    """Kafka <version>'s stock runtime jars from Maven Central, plus a logging binding; cached per version."""
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


JAVA_DIR = Path(__file__).parent / "java"


@dataclass(frozen=True)
class ConfigNames:
    """The broker and topic config names a Kafka version defines (from its own ConfigDefs)."""

    broker: frozenset[str]
    topic: frozenset[str]


def config_names(version: str, say=print) -> ConfigNames:
    """A version's config names, listed once by harness/java/ConfigNames.java run against its jars (fetched if
    need be) and kept beside them."""
    listed = cache_dir() / "kafka" / version / "config-names.txt"
    if not listed.is_file():
        libs = fetch_jars(version, say)
        done = subprocess.run(["java", "-cp", f"{libs}/*", str(JAVA_DIR / "ConfigNames.java")], capture_output=True,
                              text=True, timeout=300)
        if done.returncode != 0:
            raise ImageError(f"Listing Kafka {version}'s config names failed: {done.stderr.strip()[-400:]}")
        tmp = listed.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(done.stdout)
        tmp.replace(listed)
    rows = [line.split(" ", 1) for line in listed.read_text().splitlines() if " " in line]
    return ConfigNames(frozenset(n for k, n in rows if k == "broker"), frozenset(n for k, n in rows if k == "topic"))


def ensure_kafka_image(version: str, say=print) -> str:
    """Return the image for a Kafka version, building what is missing (jars, base, image) or stale (its recipe)."""
    tag = image_for(version)
    ours = tag.startswith(f"{IMAGE_REPO}:")
    image = _image(tag)
    if image is not None and (not ours or image.labels.get("org.kafka-chaos.recipe") == recipe(version)):
        return tag
    if not ours:
        raise ImageError(f"Image {tag} (from KCHAOS_KAFKA_IMAGE) is not present locally; pull or load it first.")
    libs = fetch_jars(version, say)
    base = ensure_jre_image(java_for(version), say)
    say(f"Building image {tag}...")
    ctx = libs.parent / "context"
    shutil.rmtree(ctx, ignore_errors=True)
    ctx.mkdir()
    shutil.copytree(libs, ctx / "libs")
    shutil.copy(DOCKER_DIR / "Dockerfile", ctx / "Dockerfile")
    try:
        _client().images.build(path=str(ctx), tag=tag, rm=True,
                               buildargs={"BASE": base, "KAFKA_VERSION": version},
                               labels={"org.kafka-chaos": "image", "org.kafka-chaos.recipe": recipe(version),
                                       "org.kafka-chaos.jars": f"stock {(libs.parent / '.complete').read_text()}"})
    except docker.errors.BuildError as exc:
        raise ImageError(f"docker build of {tag} failed: {exc.msg}") from exc
    finally:
        shutil.rmtree(ctx, ignore_errors=True)
    if image is not None:  # the stale build it replaces, now untagged
        with contextlib.suppress(docker.errors.APIError):
            _client().images.remove(image.id)
    return tag


@dataclass(frozen=True)
class LocalImage:
    """A kafka-chaos image present here, with what its labels say it is made of."""

    tag: str
    version: str
    jre: str
    jars: str
    size: int


def local_images() -> list[LocalImage]:
    """Every local kafka-chaos Kafka image."""
    rows = []
    for img in _client().images.list(name=IMAGE_REPO):
        lab = img.labels or {}
        for tag in img.tags:
            rows.append(LocalImage(tag, lab.get("org.kafka-chaos.kafka-version", "?"),
                                   lab.get("org.kafka-chaos.jre", "?"),
                                   lab.get("org.kafka-chaos.jars", "stock"), img.attrs.get("Size", 0)))
    return sorted(rows, key=lambda r: release(r.version))
