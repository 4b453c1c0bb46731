"""What differs between Kafka versions over seeds: per figure, each cell's median and range, and a
Mann-Whitney U test between every two versions of a scenario, its p-values corrected for their
number (Benjamini-Hochberg), so a difference one seed shows, or one in a thousand tests, is told
from noise."""

from __future__ import annotations

import io
import itertools
import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from scipy.stats import binomtest, false_discovery_control, mannwhitneyu

from contracts.results import RunResult

# the p-value a test must reach, and the false discovery rate its corrected q must stay under
SIGNIFICANT = 0.05


def _longest(r: RunResult) -> float | None:
    return max((w.length_s for w in r.metrics.unavailability), default=0.0) if r.metrics else None


FIGURES: dict[str, Callable[[RunResult], float | None]] = {
    "acknowledged writes lost": lambda r: float(r.counts.get("lost-write", 0)),
    "duplicates": lambda r: float(r.counts.get("duplicate", 0)
                                  + r.counts.get("timeout-duplicate", 0)),
    "longest unavailability (s)": _longest,
    "total unavailability (s)": lambda r: r.metrics.unavailable_s if r.metrics else None,
    "fault end to full ISR (s)": lambda r: r.metrics.isr_recovery_s if r.metrics else None,
    "p99 produce latency (ms)": lambda r: r.metrics.latency_ms.p99 if r.metrics else None,
}


def num(x: float) -> str:
    """A figure as people read it: 31,000 and 640, 1.25 and 0.5."""
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


@dataclass(frozen=True)
class Spread:
    """One figure of one cell over its seeds."""

    values: tuple[float, ...]

    @property
    def text(self) -> str:
        if not self.values:
            return "-"
        med, lo, hi = statistics.median(self.values), min(self.values), max(self.values)
        return num(med) if lo == hi else f"{num(med)} ({num(lo)}-{num(hi)})"


@dataclass(frozen=True)
class Difference:
    """A figure two versions of one scenario show differently (p), and how likely that is to be one
    of the chance findings among all the comparison's tests (q, Benjamini-Hochberg)."""

    scenario: str
    figure: str
    a: str
    b: str
    a_median: float
    b_median: float
    p: float
    q: float

    @property
    def text(self) -> str:
        return (f"{self.scenario}: {self.figure} median {num(self.a_median)} on Kafka {self.a} vs "
                f"{num(self.b_median)} on {self.b} (Mann-Whitney U p={self.p:.3g}, q={self.q:.3g})")


@dataclass(frozen=True)
class Tests:
    """The rank tests a comparison made, and those that reached p < SIGNIFICANT."""

    made: int
    found: list[Difference]

    @property
    def beyond_noise(self) -> list[Difference]:
        """Differences that stay under a SIGNIFICANT false discovery rate over all the tests
        made."""
        return [d for d in self.found if d.q < SIGNIFICANT]

    @property
    def suggestive(self) -> list[Difference]:
        """Differences with p < SIGNIFICANT alone: among this many tests, chance gives some."""
        return [d for d in self.found if d.q >= SIGNIFICANT]


def measured(runs: list[RunResult]) -> list[RunResult]:
    """The runs whose figures describe Kafka: complete, with the chaos as planned (a fault that
    failed or never fired measures the harness: an op waiting out its own timeout reads as a long
    unavailability)."""
    return [r for r in runs if not r.error and not (r.facts and r.facts.chaos_problems)]


def spreads(runs: list[RunResult]) -> dict[str, Spread]:
    """Each figure's values over a cell's measured runs."""
    done = measured(runs)
    return {name: Spread(tuple(v for r in done if (v := fn(r)) is not None)) for name,
            fn in FIGURES.items()}


Grid = dict[str, dict[str, list[RunResult]]]  # scenario -> version -> its runs
# scenario -> version -> figure -> its values over seeds
Spreads = dict[str, dict[str, dict[str, Spread]]]


def grid_spreads(grid: Grid) -> Spreads:
    """Every cell's figures over its seeds."""
    return {scenario: {v: spreads(runs) for v, runs in row.items()} for scenario,
            row in grid.items()}


def differences(cells: Spreads) -> Tests:
    """A two-sided Mann-Whitney U test of every (scenario, figure, version pair) whose values vary
    and whose seeds could reach p < SIGNIFICANT; those under it, each with its Benjamini-Hochberg q
    over all the tests."""
    tested = []
    for scenario, row in cells.items():
        for (a, ca), (b, cb) in itertools.combinations(sorted(row.items()), 2):
            for figure in FIGURES:
                xa, xb = ca[figure].values, cb[figure].values
                if not _rank_can_reject(len(xa), len(xb)) or len(set(xa) | set(xb)) < 2:
                    continue
                p = float(mannwhitneyu(xa, xb, alternative="two-sided").pvalue)
                tested.append((scenario, figure, a, b, statistics.median(xa), statistics.median(xb),
                               p))
    return Tests(len(tested),
                 [Difference(*t, q=q) for t, q in _with_q(tested) if t[-1] < SIGNIFICANT])


# A test that cannot reach p < SIGNIFICANT tells nothing, yet would raise every other test's q
# (Tarone's point): the rank and sign tests leave out the pairs too small for it.
def _rank_can_reject(m: int, n: int) -> bool:
    """Whether a two-sided rank test of m against n values can reach p < SIGNIFICANT (its least p: 2
    / C(m+n, m))."""
    return m > 0 and n > 0 and 2 / math.comb(m + n, m) < SIGNIFICANT


def _sign_can_reject(n: int) -> bool:
    """Whether a two-sided sign test over n scenarios can reach p < SIGNIFICANT (its least p: 2 /
    2**n)."""
    return n > 0 and 2 / 2**n < SIGNIFICANT


# the fewest scenarios a sign test can speak on
SIGN_MIN = next(n for n in range(1, 64) if _sign_can_reject(n))


def _with_q(tested: list[tuple]) -> list[tuple[tuple, float]]:
    """Each test (its p-value last) with its Benjamini-Hochberg q over all of them."""
    qs = false_discovery_control([t[-1] for t in tested]) if tested else []
    return [(t, float(q)) for t, q in zip(tested, qs, strict=True)]


@dataclass(frozen=True)
class Tendency:
    """A figure one version shows higher than another in most of the scenarios both ran (a sign test
    over them)."""

    figure: str
    higher: str
    lower: str
    more: int  # scenarios where `higher`'s median is above `lower`'s
    fewer: int  # scenarios where it is below
    p: float
    q: float

    @property
    def text(self) -> str:
        return (f"{self.figure}: higher on Kafka {self.higher} than on {self.lower} in {self.more} "
                f"of {self.more + self.fewer} scenarios whose medians differ (sign test "
                f"p={self.p:.3g}, q={self.q:.3g})")


def tendencies(cells: Spreads) -> tuple[int, list[Tendency]]:
    """(tests made, tendencies found): per figure and version pair, a two-sided sign test over the
    scenarios both versions ran of which one's median is higher, where enough medians differ for it
    to reach p < SIGNIFICANT; found where its Benjamini-Hochberg q stays under SIGNIFICANT."""
    tested = []
    for a, b in itertools.combinations(sorted({v for row in cells.values() for v in row}), 2):
        for figure in FIGURES:
            pairs = [(statistics.median(xa), statistics.median(xb)) for row in cells.values()
                     if a in row and b in row
                     if (xa := row[a][figure].values) and (xb := row[b][figure].values)]
            above, below = sum(ma > mb for ma, mb in pairs), sum(ma < mb for ma, mb in pairs)
            if _sign_can_reject(above + below):
                p = float(binomtest(above, above + below).pvalue)
                tested.append((figure, a, b, above, below, p) if above >= below
                              else (figure, b, a, below, above, p))
    return len(tested), [Tendency(*t, q=q) for t, q in _with_q(tested) if q < SIGNIFICANT]


def testable(grid: Grid) -> bool:
    """Whether some scenario has two versions with seeds enough that the rank test could reach p <
    SIGNIFICANT at all (its smallest two-sided p is 2 / C(m + n, m): 4 seeds a side, not 3)."""
    return any(_rank_can_reject(len(a), len(b))
               for row in grid.values() for a, b in itertools.combinations(row.values(), 2))


def box_plots(cells: Spreads, versions: list[str], directory: Path) -> dict[str, str]:
    """One PNG per scenario run on several seeds: a box per version for each figure. Returns
    scenario -> file name."""
    from matplotlib.figure import Figure  # imported here: `kchaos compare` alone draws these
    from PIL import Image

    files = {}
    for i, (scenario, row) in enumerate(cells.items()):
        shown = {v: row[v] for v in versions if v in row}
        if max((len(s["acknowledged writes lost"].values) for s in shown.values()), default=0) < 2:
            continue
        # as the report's timeline: no pyplot, no global state; wide enough that version labels
        # never meet
        fig = Figure(figsize=(max(3.2, 0.8 * len(shown)) * len(FIGURES), 3.2))
        axes = fig.subplots(1, len(FIGURES))
        for ax, figure in zip(axes, FIGURES, strict=True):
            ax.boxplot([shown[v][figure].values or (0.0,) for v in shown], tick_labels=list(shown))
            ax.set_title(figure, fontsize=9)
            ax.tick_params(labelsize=8)
            ax.tick_params(axis="x", labelrotation=30)
        fig.suptitle(scenario, fontsize=10)
        fig.tight_layout()
        name = f"box-{i:02d}.png"
        drawn = io.BytesIO()
        fig.savefig(drawn, format="png", dpi=80)
        # black lines and orange medians: 32 colours lose nothing, in a quarter of the bytes
        Image.open(drawn).convert("RGB").quantize(32, method=Image.Quantize.FASTOCTREE).save(
            directory / name, optimize=True)
        files[scenario] = name
    return files
