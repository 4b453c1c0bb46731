"""Build and cache the images a cluster runs on: a Debian JRE base, and Kafka <version> from its
stock jars."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import docker
import docker.errors

from contracts.describe import progress
from contracts.errors import ImageError
from contracts.versions import java_for, release
from harness.jars import fetch_jars
from harness.jre import JRES, ensure_jre_image

IMAGE_REPO = "kafka-chaos/kafka"
DOCKER_DIR = Path(__file__).parent / "docker"


def image_for(version: str) -> str:
    """The local image tag of a Kafka version (overridable, e.g. `apache/kafka:{version}`)."""
    return os.environ.get("KCHAOS_KAFKA_IMAGE", f"{IMAGE_REPO}:{{version}}").format(version=version)


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
    """A digest of the Dockerfile and the pinned JRE a version's image is built from: an image built
    from older ones is rebuilt."""
    made_of = (DOCKER_DIR / "Dockerfile").read_bytes() + JRES[java_for(version)].pin.encode()
    return hashlib.sha256(made_of).hexdigest()[:12]


def ensure_kafka_image(version: str, say=progress) -> str:
    """Return the image for a Kafka version, building what is missing (jars, base, image) or stale
    (its recipe)."""
    tag = image_for(version)
    ours = tag.startswith(f"{IMAGE_REPO}:")
    image = _image(tag)
    if image is not None and (not ours
                              or image.labels.get("org.kafka-chaos.recipe") == recipe(version)):
        return tag
    if not ours:
        raise ImageError(f"Image {tag} (from KCHAOS_KAFKA_IMAGE) is not present locally; pull or "
                         "load it first.")
    libs = fetch_jars(version, say)
    base = ensure_jre_image(java_for(version), say)
    say(f"Building image {tag}...")
    ctx = libs.parent / "context"
    shutil.rmtree(ctx, ignore_errors=True)
    ctx.mkdir()
    shutil.copytree(libs, ctx / "libs")
    shutil.copy(DOCKER_DIR / "Dockerfile", ctx / "Dockerfile")
    try:
        jars = f"stock {(libs.parent / '.complete').read_text()}"
        _client().images.build(path=str(ctx), tag=tag, rm=True,
                               buildargs={"BASE": base, "KAFKA_VERSION": version},
                               labels={"org.kafka-chaos": "image",
                                       "org.kafka-chaos.recipe": recipe(version),
                                       "org.kafka-chaos.jars": jars})
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
                                   lab.get("org.kafka-chaos.jars", "stock"),
                                   img.attrs.get("Size", 0)))
    return sorted(rows, key=lambda r: release(r.version))
