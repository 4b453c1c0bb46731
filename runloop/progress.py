"""What a run shows while it goes: a progress tick (light: the CLI's console imports it)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Tick:
    """What the progress display shows."""

    phase: str
    elapsed: float = 0.0
    remaining: float = 0.0
    acked: int = 0
    errors: int = 0
    faults: str = ""
