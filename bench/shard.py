"""`python -m bench.shard NAME [K]`: run slice K (default: the next not kept) of a committed
comparison, and keep its runs trimmed in the repository, so a comparison longer than a sitting is
measured in parts; `python -m bench.shard NAME merge` writes its page once every slice is kept.

Each run keeps results.json, scenario.json, schedule.json and run.json, what a merge needs, and a
slice is committed as one xz archive of them; its reports, histories and broker logs go, but a run
that did not pass keeps all of it under runs/ (not committed) to be traced (KEEP_WORK=DIR copies
every run there first).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from contracts import provenance
from contracts.results import RunResult

# `-m` from here: the runs use the code of the tree shards.log names, whichever tree is installed
KCHAOS = (sys.executable, "-m", "kchaos")
KEPT = ("results.json", "scenario.json", "schedule.json", "run.json")


@dataclass(frozen=True)
class Comparison:
    """A comparison's `kchaos compare` arguments, its slices, and where its page and runs live."""

    args: tuple[str, ...]
    shards: int
    home: str

    @property
    def runs(self) -> Path:
        return Path(self.home) / "runs"

    def archive(self, k: int) -> Path:
        return self.runs / f"shard-{k}.tar.xz"

    def order(self) -> list[int]:
        """Its slices in the order to run them: when slices are a multiple of seeds, each holds one
        seed, and every slice of the first seed goes before the next seed's."""
        seeds = int(self.args[self.args.index("--seeds") + 1])
        ks = range(1, self.shards + 1)
        return sorted(ks, key=lambda k: ((k - 1) % seeds, k)) if self.shards % seeds == 0 else [*ks]


COMPARISONS = {
    "catalog": Comparison(("--kafka", "4.3.1,3.9.2,3.9.2:zookeeper,2.8.2", "--suite", "nightly",
                           "--seeds", "5"), 48, "docs/comparison"),
    "upgrades": Comparison(("--kafka", "3.9.2->4.4.0,4.3.1->4.4.0,3.9.2:zookeeper->kraft",
                            "--suite", "upgrades", "--seeds", "5"), 9, "docs/compare-upgrades"),
    "clients": Comparison(("--clients", "librdkafka,java", "--suite", "transactions",
                           "--seeds", "5"), 10, "docs/compare-clients"),
    "kafka-4.4": Comparison(("--kafka", "4.3.1,4.4.0", "--suite", "nightly", "--seeds", "5"), 50,
                            "docs/compare-4.4"),
}


USAGE = "usage: python -m bench.shard NAME [K|merge]"


def usage(message: str) -> None:
    print(message, file=sys.stderr)
    sys.exit(2)


def pick(argv: list[str]) -> tuple[str, Comparison, int]:
    """The comparison and slice the command line names; a bad one exits 2 before anything runs."""
    if not argv or argv[0] not in COMPARISONS:
        given = repr(argv[0][:40]) if argv else "nothing"
        usage(f"Expected one of {', '.join(COMPARISONS)} but got NAME={given}; {USAGE}")
    name, c = argv[0], COMPARISONS[argv[0]]
    if len(argv) == 1:
        todo = [k for k in c.order() if not c.archive(k).exists()]
        if not todo:
            usage(f"every slice of {name} is kept under {c.runs}; merge them: python -m "
                  f"bench.shard {name} merge")
        return name, c, todo[0]
    k = argv[1]
    if not k.isdigit() or not 1 <= int(k) <= c.shards:
        usage(f"Expected a slice from 1 to {c.shards} or merge but got K={k[:20]!r}; {USAGE}")
    if c.archive(int(k)).exists():
        usage(f"{c.archive(int(k))} exists: slice {k} has run; remove it to run it again")
    return name, c, int(k)


def trim(work: Path, dest: Path) -> int:
    """Copy each run under work (work/SCENARIO/RUN) to dest, keeping what a merge and a reader
    need; returns how many runs were kept."""
    kept = 0
    for results in sorted(work.glob("*/*/results.json")):
        run = results.parent
        keep = dest / run.relative_to(work)
        keep.mkdir(parents=True)
        for n in KEPT:
            if (run / n).exists():
                shutil.copy2(run / n, keep / n)
        kept += 1
    return kept


def pack(kept: Path) -> Path:
    """A trimmed slice's directory as one xz archive beside it, the form its runs are committed in
    (JSON alike from run to run: about a twentieth of its size)."""
    archive = kept.with_name(f"{kept.name}.tar.xz")
    with tarfile.open(archive, "w:xz") as tar:
        tar.add(kept, arcname=kept.name)
    return archive


def unpack(runs: Path) -> list[Path]:
    """Every archive under runs unpacked beside it (git ignores the directories); the archives."""
    archives = sorted(runs.glob("*.tar.xz"))
    for archive in archives:
        with tarfile.open(archive) as tar:
            tar.extractall(runs, filter="data")
    return archives


def merge(c: Comparison) -> int:
    """c's page from its kept slices: `kchaos compare --merge`, its files moved up from the
    compare-STAMP folder into c.home with their links made relative to it."""
    if not unpack(c.runs):
        usage(f"no slice is kept under {c.runs}: run them first, {USAGE}")
    home = Path(c.home)
    before = set(home.glob("compare-*"))
    code = subprocess.run([*KCHAOS, "compare", "--merge", str(c.runs), "--runs-dir", c.home,
                           "--allow-unknown"]).returncode
    for stamp in set(home.glob("compare-*")) - before:
        for f in stamp.iterdir():
            if f.suffix == ".html":
                f.write_text(f.read_text().replace('href="../runs/', 'href="runs/'))
            f.replace(home / f.name)
        stamp.rmdir()
    return code


def keep_unpassed(work: Path, into: Path) -> list[Path]:
    """Copy each run under work whose verdict is not a pass, whole, to into; the copies."""
    kept = []
    for results in sorted(work.glob("*/*/results.json")):
        if RunResult.load(results).verdict is not True:
            run = results.parent
            kept.append(Path(shutil.copytree(run, into / run.relative_to(work),
                                            dirs_exist_ok=True)))
    return kept


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[1] == "merge" and argv[0] in COMPARISONS:
        return merge(COMPARISONS[argv[0]])
    name, c, k = pick(argv)
    dest = c.runs / f"shard-{k}"
    Path("runs").mkdir(exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"shard-{name}-{k}-", dir="runs"))
    started = time.monotonic()
    try:
        code = subprocess.run([*KCHAOS, "compare", *c.args, "--shard", f"{k}/{c.shards}",
                               "--runs-dir", str(work), "--allow-unknown"]).returncode
        kept = trim(work, dest)  # any exit code with runs: a FAIL or UNKNOWN is a finding
        if kept:
            pack(dest)
        for run in keep_unpassed(work, Path("runs") / f"unpassed-{name}-{k}"):
            print(f"not a pass, kept whole to be traced: {run}")
        line = (f"{k}: {kept} runs in {(time.monotonic() - started) / 60:.0f} min at "
                f"{provenance.commit()}, exit {code}")
        if kept:
            with (c.runs / "shards.log").open("a") as log:
                print(line, file=log)
        print(line)
        return code if kept else max(code, 1)
    finally:
        if keep_work := os.environ.get("KEEP_WORK"):
            shutil.copytree(work, keep_work, dirs_exist_ok=True)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
