"""Which kafka-storage jar carries LocalTieredStorage for a release, with Maven Central's answers
played by a stand-in."""

from __future__ import annotations

import contextlib
import io
import urllib.error

from harness import jars


def central(published: set[str]):
    """urlopen as Central answers for these file names: a HEAD gets 200 or 404, a GET the bytes."""
    def urlopen(request, timeout):
        url = request if isinstance(request, str) else request.full_url
        if url.rsplit("/", 1)[1] not in published:
            raise urllib.error.HTTPError(url, 404, "Not Found", {}, None)
        return contextlib.closing(io.BytesIO(b"PK"))
    return urlopen


def test_a_release_that_publishes_its_test_classes_as_test_fixtures_takes_that_jar(tmp_path,
                                                                                   monkeypatch):
    monkeypatch.setattr(jars, "cache_dir", lambda: tmp_path)
    monkeypatch.setattr(jars, "central_versions", lambda artifact: ("4.3.1", "4.4.0"))
    monkeypatch.setattr(jars.urllib.request, "urlopen", central(
        {"kafka-storage-4.3.1-test.jar", "kafka-storage-4.4.0-test-fixtures.jar"}))
    said: list[str] = []
    jar = jars.tiered_plugin("4.4.0", say=said.append)
    assert jar == tmp_path / "tiered" / "4.4.0" / "kafka-storage-4.4.0-test-fixtures.jar"
    assert jar.read_bytes() == b"PK" and len(said) == 1
    # 4.3.1's own test jar, never 4.4's fixtures
    assert jars.tiered_plugin("4.3.1").name == "kafka-storage-4.3.1-test.jar"
    # cached: Central is not asked again
    monkeypatch.setattr(jars.urllib.request, "urlopen", central(set()))
    assert jars.tiered_plugin("4.4.0") == jar
