"""The README stays in Jepsen's shape: short, with short sentences, and every link it gives
resolves."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def prose() -> str:
    """The README without its code blocks and with each table cell, list item and heading as a
    sentence of its own."""
    text = re.sub(r"```.*?```", "", README, flags=re.S)
    text = re.sub(r"\]\([^)]*\)", "]", text)  # a link counts by its words, not its address
    return re.sub(r"^\s*(\||#+|-)\s*", ".\n", text.replace("|", ".\n"), flags=re.M)


def sentences() -> list[list[str]]:
    return [s.split() for s in re.split(r"(?<=[.!?])\s+|\n\s*\n", prose()) if s.split()]


def test_the_readme_is_short():
    words = sum(len(s) for s in sentences())
    assert words <= 1800, words


def test_no_sentence_runs_past_40_words():
    long = [" ".join(s) for s in sentences() if len(s) > 40]
    assert not long, long


def test_the_readme_opens_with_the_two_commands_and_its_links_resolve():
    assert README.index("make chaos") < README.index("make test") < 1000
    for target in re.findall(r"\]\(((?!https?:)[^)#]+)\)", README):
        assert (ROOT / target).exists(), target
