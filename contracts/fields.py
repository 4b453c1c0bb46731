"""The field types scenario models share: durations, names, anomaly names and a known bug."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field

from contracts.anomalies import ANOMALIES

DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}
TOPIC_NAME = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")  # Kafka's legal topic names
# a directory name, matrix tags included
SCENARIO_NAME = re.compile(r"^[A-Za-z0-9_.\-\[\]=,]{1,200}$")


def seconds(value: Any) -> float:
    """'90s', '5m', '500ms' or a number of seconds."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    m = DURATION.match(str(value))
    if not m:
        raise ValueError("Expected a duration like '90s', '5m' or '500ms'")
    return float(m[1]) * UNITS[m[2]]


# read by some fault kinds only
FAULT_PARAMS = ("probability", "kbit", "torn", "latency_ms", "jitter_ms", "link", "to", "rollback",
                "disrupt", "request", "direction", "action", "error", "client_id")


def one_of(names: tuple[str, ...] | list[str]) -> str:
    """'a', 'b', 'c': the allowed values of a message."""
    return ", ".join(repr(n) for n in names)


def _anomaly(name: str) -> str:
    if name not in ANOMALIES:
        raise ValueError(f"Expected one of {one_of(ANOMALIES)}")
    return name


Anomaly = Annotated[str, AfterValidator(_anomaly)]
Seconds = Annotated[float, BeforeValidator(seconds)]  # '90s', '5m', '500ms' or a number


def _matching(pattern: re.Pattern, expected: str) -> AfterValidator:
    """A validator of strings that must match `pattern`; `expected` says what one looks like."""
    def check(v: str) -> str:
        if not pattern.match(v):
            raise ValueError(f"Expected {expected}")
        return v
    return AfterValidator(check)


TopicName = Annotated[str, _matching(TOPIC_NAME, "a Kafka topic name (1-249 letters, digits, '.', "
                                                 "'_' or '-')")]
ScenarioName = Annotated[str, _matching(SCENARIO_NAME, "a scenario name of letters, digits and . _ "
                                                       "- [ ] = , (no spaces)")]


class Strict(BaseModel):
    """A scenario model: unknown fields are refused, and values never change."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Regression(Strict):
    """A known Kafka bug the scenario reproduces: where it is described, the versions that have and
    fix it, and the forbidden anomalies that show it (any of them)."""

    bug: str = Field(min_length=1)  # e.g. "KAFKA-7128" or "KIP-101"
    link: str = Field(pattern=r"^https://")
    affected: str
    fixed: str
    shows: list[Anomaly] = Field(min_length=1)
