"""What a checker returns: an anomaly's rows, lazily, and how its few examples are drawn and
widened for the report."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from reports.frames import EXAMPLES, MAX_SUSPECTS

if TYPE_CHECKING:
    from reports.frames import Frames


@dataclass
class Finding:
    """An anomaly's rows (lazy), the order its examples are taken in, and how those few rows are
    widened: `detail` joins them back to the raw rows (shown in `shown` order), so the big
    aggregates stay fixed-width and wide columns exist for 20 keys only."""

    rows: DataFrame
    order: list[str]
    detail: Callable[[DataFrame], DataFrame] | None = None
    shown: list[str] | None = None
    # rows -> one row: partitions, t_first, t_last
    extent: Callable[[DataFrame], DataFrame] | None = None

    def labelled(self, anomaly: str, count: int) -> DataFrame:
        """Its first EXAMPLES rows, widened by `detail`, then its span (where it has an extent):
        rows of (anomaly, i, JSON), i the example's place and -1 the span, so every anomaly's share
        of the report is one union. `count`: how many rows it has; up to MAX_SUSPECTS are broadcast
        into the extent's join with the raw rows."""
        first = self.rows.orderBy(*self.order).limit(EXAMPLES)
        if self.detail is not None:
            first = self.detail(F.broadcast(first))
        place = F.row_number().over(Window.partitionBy(F.lit(anomaly))
                                    .orderBy(*(self.shown or self.order)))
        out = first.select(F.lit(anomaly).alias("anomaly"), place.alias("i"), _as_json(first))
        if self.extent is not None:
            span = self.extent(F.broadcast(self.rows) if count <= MAX_SUSPECTS else self.rows)
            out = out.unionByName(span.select(F.lit(anomaly).alias("anomaly"), F.lit(-1).alias("i"),
                                              _as_json(span)))
        return out


def _as_json(df: DataFrame) -> Column:
    """A row's every column as one JSON object, nulls kept (`json`)."""
    return F.to_json(F.struct(*df.columns), {"ignoreNullFields": "false"}).alias("json")


Checker = Callable[["Frames"], Finding | None]  # None: the anomaly does not apply to this run
CHECKERS: dict[str, Checker] = {}


def checker(name: str) -> Callable[[Checker], Checker]:
    """Register a checker under its anomaly's name (registration order is the report's order)."""
    def register(fn: Checker) -> Checker:
        CHECKERS[name] = fn
        return fn
    return register
