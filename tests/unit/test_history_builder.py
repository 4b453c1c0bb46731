"""The user guide's "Check a history you recorded yourself", done exactly as it shows (its Python,
then its command), and the builder's guidance."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from contracts.history import NO_OFFSET
from kchaos.history_builder import HistoryBuilder

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guide.md"


def section_blocks(title: str) -> dict[str, list[str]]:
    """The code blocks of one section of the guide, by language."""
    text = GUIDE.read_text().split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]
    blocks: dict[str, list[str]] = {}
    for lang, body in re.findall(r"```(\w+)\n(.*?)```", text, re.S):
        blocks.setdefault(lang, []).append(body)
    return blocks


def test_a_hand_built_history_is_checked_by_kchaos_analyze(tmp_path, monkeypatch):
    blocks = section_blocks("Check a history you recorded yourself")
    monkeypatch.chdir(tmp_path)
    exec(compile(blocks["python"][0], "guide.md", "exec"),
         {})  # noqa: S102 - the guide's own example
    command = blocks["bash"][0].split("#")[0].split()
    assert command[:2] == ["kchaos", "analyze"]
    done = subprocess.run([sys.executable, "-m", "kchaos", *command[1:]], capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 1, done.stderr[-2000:]
    result = json.loads((tmp_path / "my-run" / "results.json").read_text())
    assert result["verdict"] is False and result["forbidden"] == {"lost-write": 1}
    assert [(e["producer"], e["seq"], e["offset"])
            for e in result["examples"]["lost-write"]] == [(0, 1, 1)]
    assert (tmp_path / "my-run" / "report.html").is_file()


def test_the_builder_numbers_polls_and_keeps_each_polls_order():
    b = HistoryBuilder()
    b.read("consumer-0", 0, 0, 0, 0).poll("consumer-0", (0, 2, 0, 2),
                                          (0, 1, 0, 1)).read("consumer-1", 0, 0, 0, 0)
    rows = [(r["reader"], r["poll"], r["pos"], r["offset"]) for r in b.rows["reads"]]
    assert rows == [("consumer-0", 1, 0, 0), ("consumer-0", 2, 0, 2), ("consumer-0", 2, 1, 1),
                    ("consumer-1", 1, 0, 0)]


def test_the_builder_warns_on_a_second_send_of_one_value():
    b = HistoryBuilder().send(0, 7, 0, 3)
    with pytest.warns(UserWarning, match="second send row for producer 0 seq 7"):
        b.send(0, 7, 0, 4)


def test_only_an_ok_send_takes_an_offset():
    b = HistoryBuilder().send(0, 0, 0, outcome="fail").send(0, 1, 0, outcome="info")
    assert [r["offset"] for r in b.rows["sends"]] == [NO_OFFSET, NO_OFFSET]
    with pytest.raises(ValueError, match="only an ok send has an offset"):
        b.send(0, 2, 0, 5, outcome="info")
    with pytest.raises(ValueError, match="is ok but has no offset"):
        b.send(0, 3, 0)
