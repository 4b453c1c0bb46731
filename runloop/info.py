"""What a run says of itself as it goes: run.json (how far it got), and where it goes (its
directory)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from contracts.history import now_ns
from contracts.scenario import Scenario


@dataclass
class RunInfo:
    """Written to run.json: how far the run got and what it could not establish."""

    scenario: str
    seed: int
    kafka: str
    status: str = "running"
    phase: str = "start"
    started_utc: str = field(default_factory=lambda: datetime.now(UTC)
                             .isoformat(timespec="seconds"))
    t0_ns: int = field(default_factory=now_ns)
    timings: dict[str, float] = field(default_factory=dict)
    recovered: bool | None = None
    drain_reached: dict[str, bool] = field(default_factory=dict)
    nemesis_errors: list[str] = field(default_factory=list)
    # Kafka nodes that ended their own process: each `alias: the log line`
    node_exits: list[str] = field(default_factory=list)
    error: str = ""
    # the Docker engine's goroutine stacks, taken when one of its calls never came back
    engine_stacks: str = ""

    @classmethod
    def load(cls, run_dir: Path) -> RunInfo | None:
        """A run directory's run.json (None where there is none: a history built by hand)."""
        path = run_dir / "run.json"
        return cls(**json.loads(path.read_text())) if path.exists() else None

    def save(self, run_dir: Path) -> None:
        """Write run.json atomically."""
        tmp = run_dir / ".run.json.tmp"
        tmp.write_text(json.dumps(self.__dict__, indent=1))
        tmp.replace(run_dir / "run.json")


def run_dir_for(root: Path, scenario: Scenario) -> Path:
    """runs/<scenario>/<utc-timestamp>-<seed>/"""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return root / scenario.name / f"{stamp}-{scenario.seed}"
