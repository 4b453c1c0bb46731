"""Old and new Kafka releases start from the stock jars on the JRE each was built for, and serve."""

from __future__ import annotations

import pytest

from contracts.versions import java_for, release
from harness.broker_config import ClusterSpec
from harness.cluster import Cluster
from harness.images import ensure_kafka_image, local_images
from tests.integration.test_cluster import roundtrip

pytestmark = pytest.mark.slow  # make test-all only: three eras' images, built with JREs 8 and 11


@pytest.mark.parametrize("version, metadata", [("2.0.1", "zookeeper"), ("0.10.2.2", "zookeeper"),
                                               ("4.3.1", "kraft")])
def test_three_brokers_of_each_era_roundtrip_records(version, metadata):
    tag = ensure_kafka_image(version)
    image = next(im for im in local_images() if im.tag == tag)
    assert image.jre.startswith(f"openjdk-{java_for(version)}-jre-headless=")
    with Cluster(ClusterSpec(version=version)) as c:
        assert c.spec.metadata == metadata
        code, out = c.nodes[0].sh("java -version 2>&1")
        assert code == 0 and (f'"1.{java_for(version)}.' if java_for(version) == 8
                              else f'"{java_for(version)}.') in out
        # idempotent producers came with KIP-98 in 0.11
        roundtrip(c, idempotent=release(version) >= (0, 11))
