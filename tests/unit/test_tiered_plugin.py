"""Which kafka-storage jar carries LocalTieredStorage for a release, with Maven Central's answers
played by a stand-in that serves small real jars."""

from __future__ import annotations

import contextlib
import io
import urllib.error
import zipfile

from harness import jars


def jar_bytes(plugin: bool) -> bytes:
    """A jar holding LocalTieredStorage's class, or only a test class as 4.4.0's test jar does."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr(jars.TIERED_CLASS if plugin else "org/apache/kafka/SomeTest.class", b"\xca")
    return out.getvalue()


def central(published: dict[str, bool]):
    """urlopen as Central answers: these file names (True: with the plugin) or 404."""
    def urlopen(request, timeout):
        url = request if isinstance(request, str) else request.full_url
        if (name := url.rsplit("/", 1)[1]) not in published:
            raise urllib.error.HTTPError(url, 404, "Not Found", {}, None)
        return contextlib.closing(io.BytesIO(jar_bytes(published[name])))
    return urlopen


def test_a_release_that_publishes_its_test_classes_as_test_fixtures_takes_that_jar(tmp_path,
                                                                                   monkeypatch):
    monkeypatch.setattr(jars, "cache_dir", lambda: tmp_path)
    monkeypatch.setattr(jars, "central_versions", lambda artifact: ("4.3.1", "4.4.0"))
    monkeypatch.setattr(jars.urllib.request, "urlopen", central(
        {"kafka-storage-4.3.1-test.jar": True, "kafka-storage-4.4.0-test-fixtures.jar": True}))
    said: list[str] = []
    jar = jars.tiered_plugin("4.4.0", say=said.append)
    assert jar == tmp_path / "tiered" / "4.4.0" / "kafka-storage-4.4.0-test-fixtures.jar"
    assert len(said) == 1
    # 4.3.1's own test jar, never 4.4's fixtures
    assert jars.tiered_plugin("4.3.1").name == "kafka-storage-4.3.1-test.jar"
    # cached: Central is not asked again
    monkeypatch.setattr(jars.urllib.request, "urlopen", central({}))
    assert jars.tiered_plugin("4.4.0") == jar


def test_a_test_jar_without_the_plugin_is_passed_over_even_when_cached_as_the_choice(tmp_path,
                                                                                     monkeypatch):
    monkeypatch.setattr(jars, "cache_dir", lambda: tmp_path)
    monkeypatch.setattr(jars, "central_versions", lambda artifact: ("4.4.0",))
    tests_only = tmp_path / "tiered" / "4.4.0" / "kafka-storage-4.4.0-test.jar"
    tests_only.parent.mkdir(parents=True)
    tests_only.write_bytes(jar_bytes(plugin=False))
    (tmp_path / "tiered" / "4.4.0.jar").write_text(str(tests_only))  # an earlier wrong choice
    monkeypatch.setattr(jars.urllib.request, "urlopen", central(
        {"kafka-storage-4.4.0-test.jar": False, "kafka-storage-4.4.0-test-fixtures.jar": True}))
    assert jars.tiered_plugin("4.4.0").name == "kafka-storage-4.4.0-test-fixtures.jar"
    assert (tmp_path / "tiered" / "4.4.0.jar").read_text().endswith("-test-fixtures.jar")
