"""The host-side cgroup thaw that gets a stuck engine going again, on hand-built cgroup trees of
each layout."""

from __future__ import annotations

import pytest
import requests.exceptions

from harness import freezer

CID = "c0ffee"


def control(root, layout: str):
    path = {"v1": root / "freezer" / "docker" / CID / "freezer.state",
            "v1-systemd": root / "freezer" / "system.slice" / f"docker-{CID}.scope"
            / "freezer.state",
            "v2": root / "docker" / CID / "cgroup.freeze",
            "v2-systemd": root / "system.slice" / f"docker-{CID}.scope" / "cgroup.freeze"}[layout]
    path.parent.mkdir(parents=True)
    return path


@pytest.mark.parametrize(("layout", "before", "op", "after"), [
    ("v1", "FROZEN", freezer.thaw, "THAWED"), ("v1", "FREEZING", freezer.thaw, "THAWED"),
    ("v1-systemd", "FROZEN", freezer.thaw, "THAWED"), ("v2", "1", freezer.thaw, "0"),
    ("v2-systemd", "1", freezer.thaw, "0"), ("v1", "THAWED", freezer.freeze, "FROZEN"),
    ("v2-systemd", "0", freezer.freeze, "1")])
def test_thaw_and_freeze_write_the_layouts_value_once(tmp_path, layout, before, op, after):
    path = control(tmp_path, layout)
    path.write_text(before + "\n")
    assert op(CID, tmp_path) is True
    assert path.read_text() == after
    assert op(CID, tmp_path) is False


def test_without_a_cgroup_nothing_is_written(tmp_path):
    assert freezer.thaw(CID, tmp_path) is False
    assert freezer.freeze(CID, tmp_path) is False


def test_a_call_that_times_out_thaws_and_says_so(tmp_path):
    path = control(tmp_path, "v1")
    path.write_text("FROZEN\n")

    def stuck():
        raise requests.exceptions.ReadTimeout("Read timed out. (read timeout=30)")

    with pytest.raises(freezer.EngineStuck,
                       match=r"`docker pause kafka-3` within 30 s; its cgroup was frozen and "
                                                  r"has been thawed from this host"):
        freezer.bounded(stuck, CID, "docker pause kafka-3", tmp_path)
    assert path.read_text() == "THAWED"


def test_a_call_that_answers_leaves_the_cgroup_alone(tmp_path):
    path = control(tmp_path, "v1")
    path.write_text("FROZEN\n")
    freezer.bounded(lambda: None, CID, "docker pause kafka-3", tmp_path)
    assert path.read_text() == "FROZEN\n"
