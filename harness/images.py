"""Build and cache the images a cluster runs on: a Debian JRE base, and Kafka <version> from Maven Central."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import docker
import docker.errors

from contracts.errors import ImageError, UsageError
from contracts.paths import cache_dir
from contracts.versions import DEFAULT_VERSION, VERSION_RE
from harness.apt import apt_install

BASE_IMAGE = os.environ.get("KCHAOS_BASE_IMAGE", "kafka-chaos/jre:17")
IMAGE_REPO = "kafka-chaos/kafka"
CENTRAL = "https://repo1.maven.org/maven2"
DEBIAN_MIRROR = os.environ.get("KCHAOS_DEBIAN_MIRROR", "http://deb.debian.org/debian")
BASE_PACKAGES = ("openjdk-17-jre-headless", "iproute2", "iptables", "procps", "ca-certificates")
# The artifacts a usable release needs: the broker, and kafka-tools (ProducerPerformance for `make bench`).
REQUIRED_ARTIFACTS = ("kafka_2.13", "kafka-tools")
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


def check_version(version: str, field: str = "--kafka") -> None:
    """Raise one clear error unless every artifact a Kafka image needs exists on Maven Central (or its jars are
    already cached here); `field` is where the user wrote the version."""
    if not VERSION_RE.match(version):
        raise UsageError(f"Expected a Kafka version like '{DEFAULT_VERSION}' but got {field}={version!r}")
    if (cache_dir() / "kafka" / version / ".complete").exists():
        return
    missing = [a for a in REQUIRED_ARTIFACTS if version not in central_versions(a)]
    if not missing:
        return
    complete = [v for v in central_versions("kafka_2.13") if all(v in central_versions(a) for a in REQUIRED_ARTIFACTS)]
    newest = ", ".join(sorted(complete, key=_version_key, reverse=True)[:5])
    if len(missing) == len(REQUIRED_ARTIFACTS):
        said = f"Maven Central has no org.apache.kafka:kafka_2.13:{version}"
    else:
        said = f"Kafka {version} is incomplete on Maven Central (missing: {', '.join(missing)})"
    raise UsageError(f"{said} ({field}={version!r}). Newest complete versions there: {newest}.")


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else -1 for p in re.split(r"[.\-]", version))


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


def recipe() -> str:
    """A digest of the Dockerfile our Kafka images are built from: an image built from an older one is rebuilt."""
    return hashlib.sha256((DOCKER_DIR / "Dockerfile").read_bytes()).hexdigest()[:12]


def ensure_base_image(say=print) -> str:
    """Return the JRE base image, building it with debootstrap + `docker import` when missing."""
    if image_exists(BASE_IMAGE):
        return BASE_IMAGE
    if shutil.which("debootstrap") is None:
        apt_install("debootstrap", error=ImageError)
    say(f"Building base image {BASE_IMAGE} with debootstrap (about a minute, once)...")
    with tempfile.TemporaryDirectory(prefix="kchaos-rootfs-") as tmp:
        root = Path(tmp) / "rootfs"
        _run(["debootstrap", "--variant=minbase", f"--include={','.join(BASE_PACKAGES)}", "bookworm", str(root),
              DEBIAN_MIRROR], "debootstrap")
        # nft-backed iptables needs modules a container may lack; the legacy backend works everywhere.
        _run(["chroot", str(root), "update-alternatives", "--set", "iptables", "/usr/sbin/iptables-legacy"],
             "selecting iptables-legacy")
        for junk in ("var/cache/apt/archives", "var/lib/apt/lists", "usr/share/doc", "usr/share/man"):
            shutil.rmtree(root / junk, ignore_errors=True)
        tar = subprocess.Popen(["tar", "-C", str(root), "-c", "."], stdout=subprocess.PIPE)
        _run(["docker", "import", "-c", "ENV LANG=C.UTF-8", "-", BASE_IMAGE], "docker import", stdin=tar.stdout)
        tar.wait()
    return BASE_IMAGE


def _run(cmd: list[str], what: str, **kw) -> None:
    done = subprocess.run(cmd, capture_output=True, text=kw.get("stdin") is None, **kw)
    if done.returncode != 0:
        err = done.stderr if isinstance(done.stderr, str) else done.stderr.decode(errors="replace")
        raise ImageError(f"{what} failed (exit {done.returncode}): {err.strip()[-800:]}")


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
    """The SLF4J binding the broker POM leaves out: log4j2 for 4.x (log4j-core present), reload4j for 3.x."""
    if any(libs.glob("slf4j-reload4j-*.jar")) or any(libs.glob("log4j-slf4j*-impl-*.jar")):
        return []
    slf4j = _jar_version(libs, "slf4j-api") or "1.7.36"
    log4j2 = _jar_version(libs, "log4j-core")
    if log4j2:
        impl = "log4j-slf4j2-impl" if slf4j.startswith("2.") else "log4j-slf4j-impl"
        return [Artifact("org.apache.logging.log4j", impl, log4j2)]
    return [Artifact("ch.qos.reload4j", "reload4j", "1.2.25"), Artifact("org.slf4j", "slf4j-reload4j", slf4j)]


def fetch_jars(version: str, say=print) -> Path:
    """Kafka <version>'s runtime jars from Maven Central, plus a logging binding; cached per version."""
    home = cache_dir() / "kafka" / version
    libs = home / "libs"
    if (home / ".complete").exists():
        return libs
    check_version(version)
    say(f"Fetching Kafka {version} jars from Maven Central...")
    shutil.rmtree(libs, ignore_errors=True)
    libs.mkdir(parents=True)
    kafka = [Artifact("org.apache.kafka", a, version) for a in REQUIRED_ARTIFACTS]
    _copy_dependencies(home, kafka, libs)
    binding = logging_binding(libs)
    if binding:
        _copy_dependencies(home, binding, libs)
    (home / ".complete").write_text(version)
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
    if image is not None and (not ours or image.labels.get("org.kafka-chaos.recipe") == recipe()):
        return tag
    if not ours:
        raise ImageError(f"Image {tag} (from KCHAOS_KAFKA_IMAGE) is not present locally; pull or load it first.")
    libs = fetch_jars(version, say)
    base = ensure_base_image(say)
    say(f"Building image {tag}...")
    ctx = libs.parent / "context"
    shutil.rmtree(ctx, ignore_errors=True)
    ctx.mkdir()
    shutil.copytree(libs, ctx / "libs")
    shutil.copy(DOCKER_DIR / "Dockerfile", ctx / "Dockerfile")
    try:
        _client().images.build(path=str(ctx), tag=tag, rm=True,
                               buildargs={"BASE": base, "KAFKA_VERSION": version},
                               labels={"org.kafka-chaos": "image", "org.kafka-chaos.recipe": recipe()})
    except docker.errors.BuildError as exc:
        raise ImageError(f"docker build of {tag} failed: {exc.msg}") from exc
    finally:
        shutil.rmtree(ctx, ignore_errors=True)
    if image is not None:  # the stale build it replaces, now untagged
        with contextlib.suppress(docker.errors.APIError):
            _client().images.remove(image.id)
    return tag


def local_images() -> list[tuple[str, str, int]]:
    """(tag, kafka version, size in bytes) of every local kafka-chaos image."""
    rows = []
    for img in _client().images.list(name=IMAGE_REPO):
        for tag in img.tags:
            rows.append((tag, img.labels.get("org.kafka-chaos.kafka-version", "?"), img.attrs.get("Size", 0)))
    return sorted(rows)
