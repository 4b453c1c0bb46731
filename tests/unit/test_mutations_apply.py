"""The curated mutants still fit the code they mutate: each one's text occurs once in its file."""

from __future__ import annotations

from pathlib import Path

from tests.mutations import MUTATIONS

ROOT = Path(__file__).resolve().parents[2]


def test_each_mutation_text_occurs_once_in_its_file():
    misfits = [m.what for m in MUTATIONS if (ROOT / m.path).read_text().count(m.old) != 1]
    assert misfits == []
