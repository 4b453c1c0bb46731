"""The README's "Check a history you recorded yourself", done exactly as it shows: its Python, then its command."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def section_blocks(title: str) -> dict[str, list[str]]:
    """The code blocks of one README section, by language."""
    text = README.read_text().split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]
    blocks: dict[str, list[str]] = {}
    for lang, body in re.findall(r"```(\w+)\n(.*?)```", text, re.S):
        blocks.setdefault(lang, []).append(body)
    return blocks


def test_a_hand_built_history_is_checked_by_kchaos_analyze(tmp_path, monkeypatch):
    blocks = section_blocks("Check a history you recorded yourself")
    monkeypatch.chdir(tmp_path)
    exec(compile(blocks["python"][0], "README.md", "exec"), {})  # noqa: S102 - the README's own example
    command = blocks["bash"][0].split("#")[0].split()
    assert command[:2] == ["kchaos", "analyze"]
    done = subprocess.run([sys.executable, "-m", "kchaos", *command[1:]], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 1, done.stderr[-2000:]
    result = json.loads((tmp_path / "my-run" / "results.json").read_text())
    assert result["verdict"] == "false" and result["forbidden"] == {"lost-write": 1}
    assert [(e["producer"], e["seq"], e["offset"]) for e in result["examples"]["lost-write"]] == [(0, 1, 1)]
    assert (tmp_path / "my-run" / "report.html").is_file()
