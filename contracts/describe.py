"""What a user reads: scenario errors as one line each, naming the field path, the value and what is
expected (like Hypothesis), with a suggestion where the value looks like a misspelling; and set-up
progress on stderr."""

from __future__ import annotations

import difflib
import re
import sys
from typing import Any

from pydantic import BaseModel

from contracts.scenario import QUOTED, Scenario

CAP = 80  # characters of a value that an error line echoes
BOUNDS = {"greater_than": ">", "greater_than_equal": ">=", "less_than": "<",
          "less_than_equal": "<="}


def shown(value: Any) -> str:
    """`value`'s repr cut to CAP characters: an error line echoes what it got, never a whole
    document."""
    text = repr(value)
    return text if len(text) <= CAP else text[:CAP - 1] + "…"


def closest(word: Any, choices: list[str], cutoff: float = 0.6) -> str | None:
    """The one of `choices` that `word` most likely misspells, if any is close enough."""
    close = difflib.get_close_matches(str(word), choices, n=1, cutoff=cutoff)
    return close[0] if close else None


def _suggest(word: Any, choices: list[str]) -> str:
    """' (did you mean 'x'?)' when `word` is close to one of `choices`."""
    close = closest(word, choices)
    return f" (did you mean {close!r}?)" if close else ""


def _fields_at(loc: tuple) -> list[str]:
    """The field names a model takes at an error's location (for suggestions); [] inside free-form
    mappings."""
    model: Any = Scenario
    for part in loc[:-1]:
        field = model.model_fields.get(part) if isinstance(part, str) else None
        if isinstance(part, int):
            continue
        annotation = getattr(field, "annotation", None)
        inner = getattr(annotation, "__args__",
                        (annotation,))[0] if annotation is not None else None
        model = inner if isinstance(inner, type) and issubclass(inner, BaseModel) else annotation
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            return []
    return [f.alias or name for name, f in model.model_fields.items()]


def describe_error(err: dict, where: str) -> str:
    """One pydantic error as one line naming the field path, the value and what is expected, like
    Hypothesis."""
    loc = tuple(p for p in err["loc"] if p not in ("function-after", "function-before"))
    path = ".".join(str(p) for p in loc).replace("for_", "for")
    got = err.get("input")
    kind = err["type"]
    if kind == "literal_error":
        expected = err["ctx"]["expected"].replace(" or ", ", ")
        hint = _suggest(got, re.findall(QUOTED, expected))
        return f"{where}: Expected one of {expected} but got {path}={shown(got)}{hint}"
    if kind == "extra_forbidden":
        return f"{where}: Unknown field {path!r}{_suggest(loc[-1], _fields_at(loc))}"
    if kind == "missing":
        return f"{where}: Missing required field {path!r}"
    if kind in BOUNDS:
        limit = next(iter(err["ctx"].values()))
        return f"{where}: Expected {path} {BOUNDS[kind]} {limit} but got {path}={shown(got)}"
    msg = err["msg"].removeprefix("Value error, ")
    if msg.startswith("Expected"):
        choices = re.findall(QUOTED, msg)
        hint = _suggest(got, choices) if isinstance(got, str) else ""
        return f"{where}: {msg} but got {path}={shown(got)}{hint}"
    return f"{where}: {msg}" if "=" in msg else f"{where}: {path}: {msg} (got {shown(got)})"


def progress(message: str) -> None:
    """A line of set-up progress (a download, a build) on stderr, where it never mixes with a
    command's output."""
    print(message, file=sys.stderr, flush=True)
