"""The scenario × column table of `kchaos compare` (versions, upgrade paths or clients), as HTML
and Markdown."""

from __future__ import annotations

import os
import re
from collections import Counter, defaultdict
from pathlib import Path

from contracts.clients import LIBRDKAFKA
from contracts.results import Badge, RunResult
from contracts.versions import release, target_label
from reports.compare_stats import (
    SIGN_MIN,
    SIGNIFICANT,
    Spread,
    Tendency,
    Tests,
    box_plots,
    differences,
    grid_spreads,
    measured,
    tendencies,
    testable,
)
from reports.render import ENV, page

SEVERITY = tuple(Badge)  # a cell shows its runs' most severe badge


def worst(runs: list[RunResult]) -> Badge:
    """The badge a cell shows: the most severe of its seeds' (Badge's order, FAIL last)."""
    return max((r.badge for r in runs), key=SEVERITY.index)


def cell(runs: list[RunResult]) -> str:
    """Badges, anomalies summed over runs (* = allowed), harness errors and the worst
    unavailability."""
    badges = Counter(r.badge for r in runs)
    head = worst(runs) if len(runs) == 1 else ", ".join(
        f"{b}×{n}" for b, n in sorted(badges.items()))
    totals: Counter = Counter()
    for r in runs:
        totals.update({k: n for k, n in r.counts.items() if n})
    allowed = set(runs[0].allowed)
    seen = ", ".join(f"{k}={n}{'*' if k in allowed else ''}" for k, n in sorted(totals.items()))
    miss = ""
    errors = sum(1 for r in runs if r.error)
    miss += f"; harness error in {errors}/{len(runs)}" if errors else ""
    kept = measured(runs)
    unplanned = len(runs) - errors - len(kept)
    miss += (f"; chaos not as planned in {unplanned}/{len(runs)} (no figures from those)"
             if unplanned else "")
    unavailable = max((r.metrics.unavailable_s for r in kept if r.metrics), default=None)
    down = f"; unavailable ≤ {unavailable} s" if unavailable is not None else ""
    return f"{head}{miss}; {seen or 'no anomalies'}{down}"


def column(r: RunResult, by_client: bool = False) -> str:
    """A run's column, as `--kafka` names it: its version, its metadata mode when not the default
    (3.9.2:zookeeper), and where an upgrade (`->4.4.0`) or a migration (`->kraft`) took it;
    `by_client`: and its producers' client (`4.4.0 java:3.9.2`), as `--clients` names it."""
    label = target_label(r.kafka, (r.settings.get("kafka") or {}).get("metadata"))
    lines = r.settings.get("faults") or []
    if to := next((f["to"] for f in lines if f.get("to")), None):
        label = f"{label}->{to}"
    elif any(f.get("fault") == "migrate" for f in lines):
        label = f"{label}->kraft"
    return f"{label} {client(r)}" if by_client else label


def client(r: RunResult) -> str:
    """The `client` a run's producers ran (every role's, under `--clients`)."""
    return (r.settings.get("producer") or {}).get("client", LIBRDKAFKA)


def several_clients(results: list[RunResult]) -> bool:
    """Whether a scenario ran on more than one client in one column, as under `--clients`: each
    client is then a column of its own. Scenarios that name their own client compare versions."""
    ran: dict[tuple[str, str], set[str]] = defaultdict(set)
    for r in results:
        ran[r.row_name, column(r)].add(client(r))
    return any(len(clients) > 1 for clients in ran.values())


def row(r: RunResult, by_client: bool) -> str:
    """A run's row: its scenario, and the client it ran when no column says it and it is not
    librdkafka (`txn-stale-requests (java)`)."""
    name = client(r).partition(":")[0]
    return r.row_name if by_client or name == LIBRDKAFKA else f"{r.row_name} ({name})"


def subject(results: list[RunResult], grid: dict[str, dict[str, list[RunResult]]]
            ) -> tuple[str, str]:
    """What the columns are, as (one, many): clients under `--clients`, upgrade paths when a row
    sets one beside another column (or, no row having two, a column names one), else versions."""
    if several_clients(results):
        return "client", "clients"
    compared = [c for cells in grid.values() if len(cells) > 1 for c in cells]
    if any("->" in c for c in compared or [c for cells in grid.values() for c in cells]):
        return "upgrade", "upgrade paths"
    return "version", "versions"


def table(results: list[RunResult]) -> tuple[list[str], dict[str, dict[str, list[RunResult]]]]:
    """(columns newest version first, each in its metadata modes, and per client when a scenario ran
    on more than one in a column; scenario -> column -> its runs)."""
    by_client = several_clients(results)
    columns = sorted({column(r, by_client) for r in results},
                     key=lambda v: (release(re.split(r"[: ]|->", v)[0]), v), reverse=True)
    grid: dict[str, dict[str, list[RunResult]]] = defaultdict(lambda: defaultdict(list))
    for r in results:
        # a regression's versions share a row
        grid[row(r, by_client)][column(r, by_client)].append(r)
    return columns, dict(sorted(grid.items()))


def figures(runs: list[RunResult], spread: dict[str, Spread]) -> str:
    """Median (range) over a cell's measured seeds of each figure that varies between versions (""
    for one seed)."""
    if len(runs) < 2:
        return ""
    return "; ".join(f"{name} {sp.text}" for name, sp in spread.items() if sp.values)


def summary(tests: Tests, trends: tuple[int, list[Tendency]], runs: int, can_test: bool,
            noun: tuple[str, str]) -> tuple[list[str], list[str]]:
    """What differs between the columns (`noun`, one and many): (each difference unlikely to be
    noise once every test is counted, or that no cell has seeds enough, then tendencies across
    scenarios; the differences only suggestive, for a fold)."""
    one, many = noun
    sure, maybe = tests.beyond_noise, tests.suggestive
    how = (f"{tests.made} Mann-Whitney U tests over {runs} runs, each of one figure of one "
           "scenario "
           f"between two {many} whose seeds could reach p < {SIGNIFICANT}; a difference counts "
           "when its p-value corrected for their number (Benjamini-Hochberg q) stays under "
           f"{SIGNIFICANT}")
    if not can_test:
        out = [f"Too few seeds for a rank test to tell {many} apart in one scenario ({runs} "
               "runs; "
               f"Mann-Whitney U reaches p < {SIGNIFICANT} only with 4 seeds "
               f"{'an' if one[0] in 'aeiou' else 'a'} {one}): compare "
               "the "
               "figures by eye, or run `kchaos compare --seeds 4` or more."]
    elif sure:
        out = [f"What differs between {many} beyond its seeds' spread ({how}):", "",
               *(f"- {d.text}" for d in sure)]
    else:
        out = [f"No single difference between {many} is beyond doubt once every test is counted "
               f"({how})."]
    if trends[1]:
        out += ["", f"Across scenarios (per figure and two {many}, a sign test over the scenarios "
                    f"both ran of which had the higher median, where {SIGN_MIN} or more medians "
                    f"differ; Benjamini-Hochberg q under {SIGNIFICANT} over the {trends[0]} such "
                    "tests):", "", *(f"- {t.text}" for t in trends[1])]
    if not maybe:
        return out, []
    count = f"{len(maybe)} difference{'s' if len(maybe) > 1 else ''}"
    return out, [f"Also p < {SIGNIFICANT}, but not beyond "
                 f"chance among so many tests: {count}, where "
                 "chance alone gives about "
                 f"{SIGNIFICANT * tests.made:.0f} of "
                 f"{tests.made} tests if no {one} differed. "
                 "The more these outnumber chance's, the "
                 "more of them are real, but no one of them "
                 "is sure: more seeds tell which.", "", *(f"- {d.text}" for d in maybe)]


def tables(grid: dict[str, dict[str, list[RunResult]]],
           versions: list[str]) -> list[tuple[list[str], list[str]]]:
    """The grid as tables with a column only for what ran: (its versions, its scenarios), scenarios
    grouped by the versions they ran on, the most scenarios first (a regression's affected and fixed
    versions get their own)."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for name, row in grid.items():
        groups.setdefault(tuple(v for v in versions if v in row), []).append(name)
    return [(list(vs), names) for vs,
            names in sorted(groups.items(), key=lambda g: (-len(g[1]), g[0]))]


def blocks(lines: list[str]) -> list[tuple[str, list[str]]]:
    """The summary's lines as HTML blocks: ("p", [text]) for a paragraph, ("ul", items) for a run of
    "- " lines."""
    out: list[tuple[str, list[str]]] = []
    for line in filter(None, lines):
        if not line.startswith("- "):
            out.append(("p", [line]))
        elif out and out[-1][0] == "ul":
            out[-1][1].append(line[2:])
        else:
            out.append(("ul", [line[2:]]))
    return out


def write_compare(results: list[RunResult], directory: Path) -> tuple[Path, Path]:
    """comparison.html and comparison.md: the version x scenario tables first (each cell linking its
    runs), then what differs beyond chance, then (folded in the HTML) what is only suggestive, and
    box plots."""
    directory.mkdir(parents=True, exist_ok=True)
    versions, grid = table(results)
    cells = grid_spreads(grid)
    noun = subject(results, grid)
    said, suggestive = summary(differences(cells), tendencies(cells), len(results), testable(grid),
                               noun)
    parts = tables(grid, versions)
    md = directory / "comparison.md"
    md.write_text(f"# kafka-chaos {noun[0]} comparison\n\n" + LEGEND + "\n\n" + "\n\n".join(
        _markdown(grid, cells, vs, names) for vs, names in parts) + "\n\n## What differs\n\n"
                  + "\n".join(said)
        + ("\n\n## Suggestive only\n\n" + "\n".join(suggestive) if suggestive else "") + "\n")
    html = directory / "comparison.html"
    plots = box_plots(cells, versions, directory)

    # relative, so the comparison and its runs can move together (CI artifacts)
    def link(run: RunResult) -> str:
        return os.path.relpath(page(run), directory)

    html.write_text(ENV.get_template("compare.html.j2").render(
        parts=parts, grid=grid, cells=cells, cell=cell, worst=worst, link=link, figures=figures,
        plots=plots, summary=blocks(said), suggestive=blocks(suggestive), legend=LEGEND,
        noun=noun))
    return html, md


LEGEND = ("Each cell: its runs' badges, anomalies summed over its seeds (those marked * are "
          "allowed under the scenario's settings), and the median (and range) of each figure over "
          "the seeds whose chaos happened as planned.")


def _markdown(grid: dict, cells: dict, versions: list[str], names: list[str]) -> str:
    """One table of the comparison as Markdown."""
    lines = ["| scenario | " + " | ".join(f"Kafka {v}" for v in versions) + " |",
             "|---|" + "---|" * len(versions)]
    for name in names:
        row = grid[name]
        lines.append(f"| {name} | " + " | ".join(
            (cell(row[v]) + (f"; {f}" if (f := figures(row[v], cells[name][v])) else ""))
                                                 if v in row else "not run"
            for v in versions) + " |")
    return "\n".join(lines)
