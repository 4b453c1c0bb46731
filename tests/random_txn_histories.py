"""Random transactional histories for the oracle's property tests: transactional and plain
producers, markers, read_committed and assign-mode readers, group commits and an eos-copy stage,
written with the public builder."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from contracts.scenario import copy_topic
from kchaos.history_builder import HistoryBuilder
from tests.oracle import Named
from tests.random_histories import move_partition

Record = tuple[int, int]  # (producer, seq)
MARKER: Record = (-2, -2)  # a transaction's commit or abort marker: an offset without a record
FATES = ("committed", "aborted", "unknown")


@dataclass
class Topic:
    """One topic's log and the fate of each transaction's values, before the history is written."""

    name: str
    log: dict[int, list[Record]]
    hidden: set[Record] = field(default_factory=set)  # in an aborted or undecided transaction
    fates: dict[tuple[int, int], str] = field(default_factory=dict)

    def visible(self, record: Record, committed: bool) -> bool:
        return record != MARKER and not (committed and record in self.hidden)


def _send(h: HistoryBuilder, rng: random.Random, t: Topic, pid: int, seq: int, txn: int) -> int:
    """One send, written to a random partition (rarely not at all) and acked where it landed."""
    p = rng.randrange(len(t.log))
    log = t.log[p]
    outcome = rng.choices(("ok", "info"), (0.92, 0.08))[0]
    if rng.random() < (0.97 if outcome == "ok" else 0.5):
        log.append((pid, seq))
    offset = (log.index((pid, seq)) if (pid, seq) in log else len(log)) if outcome == "ok" else None
    h.send(pid, seq, p, offset, outcome=outcome, error=None if outcome == "ok" else "X", txn=txn)
    return p


def _transact(h: HistoryBuilder, rng: random.Random, t: Topic, pids: list[int]) -> None:
    """Each producer's transactions one after another, the producers interleaved, beside a plain
    producer's sends; each transaction commits, aborts or is left undecided."""
    txn = dict.fromkeys(pids, 0)
    seq = dict.fromkeys([*pids, pids[0] + 5], 0)
    open_: dict[int, list[Record]] = {pid: [] for pid in pids}
    touched: dict[int, set[int]] = {pid: set() for pid in pids}
    for _ in range(rng.randint(8, 20)):
        pid = rng.choice([*pids, pids[0] + 5])
        if pid not in open_:
            _send(h, rng, t, pid, seq[pid], -1)
        elif open_[pid] and rng.random() < 0.3:
            _end(h, rng, t, pid, txn[pid], open_[pid], touched[pid])
            txn[pid], open_[pid], touched[pid] = txn[pid] + 1, [], set()
            continue
        else:
            touched[pid].add(_send(h, rng, t, pid, seq[pid], txn[pid]))
            open_[pid].append((pid, seq[pid]))
        seq[pid] += 1
    for pid in pids:
        if open_[pid]:
            _end(h, rng, t, pid, txn[pid], open_[pid], touched[pid])


def _end(h: HistoryBuilder, rng: random.Random, t: Topic, pid: int, txn: int,
         values: list[Record], partitions: set[int]) -> None:
    """A transaction's fate, its txns row (rarely none: the fate is then unknown) and markers."""
    fate = rng.choices(FATES, (0.65, 0.25, 0.1))[0]
    if rng.random() < 0.05:
        fate = "unknown"
    else:
        h.transaction(pid, txn, fate, asked_commit=fate == "committed" or rng.random() < 0.2)
    t.fates[(pid, txn)] = fate
    if fate != "committed":
        t.hidden.update(values)
    if fate != "unknown":
        for p in partitions:
            t.log[p].append(MARKER)


def _poll(rng: random.Random, t: Topic, at: dict[int, int], committed: bool,
          contiguous: bool) -> list[tuple[int, int, int, int]]:
    """Up to three records a partition from each cursor, as the reader's isolation sees the log;
    now and then a record skipped, read again, or read though hidden."""
    records, weights = [], (0.9, 0.1, 0.0) if contiguous else (0.88, 0.08, 0.04)
    for p in sorted(at):
        log = t.log[p]
        for _ in range(rng.randint(1, 3)):
            off = at[p]
            while off < len(log) and not (t.visible(log[off], committed)
                                          or (log[off] != MARKER and rng.random() < 0.05)):
                off += 1
            off += rng.choices((0, 1, -1), weights)[0]
            if 0 <= off < len(log) and log[off] != MARKER:
                records.append((p, off, *log[off]))
                at[p] = off + 1
    return records


def _live(h: HistoryBuilder, rng: random.Random, t: Topic, reader: str, committed: bool) -> None:
    """A group member that gains and loses partitions, polling as its isolation sees the log."""
    at = {p: 0 for p in rng.sample(sorted(t.log), rng.randint(1, len(t.log)))}
    for p in at:
        h.event(reader, "assign", partition=p)
    for _ in range(rng.randint(2, 8)):
        move = rng.choices(("poll", "gain", "lose"), (0.7, 0.15, 0.15))[0]
        if move == "poll":
            h.poll(reader, *_poll(rng, t, at, committed, False))
        else:
            move_partition(h, rng, t.log, reader, at, move)


def _assigned(h: HistoryBuilder, rng: random.Random, t: Topic, reader: str) -> None:
    """An assign-mode read_committed reader: every partition from the beginning, in order, now and
    then passing over a record."""
    at = dict.fromkeys(t.log, 0)
    for p in at:
        h.event(reader, "assign", partition=p)
    for _ in range(rng.randint(3, 10)):
        h.poll(reader, *_poll(rng, t, at, True, True))


def _drain_and_replicas(h: HistoryBuilder, rng: random.Random, t: Topic) -> None:
    """The final read, read_uncommitted as the harness's (sometimes cut short or missing a record),
    and three replicas holding every record (rarely one diverging or missing)."""
    for p, log in t.log.items():
        reached = rng.random() > 0.15
        stop = len(log) if reached else rng.randrange(len(log) + 1)
        for offset, record in enumerate(log[:stop]):
            if record != MARKER and rng.random() > 0.04:
                h.read("drain", p, offset, *record)
        h.drain_end(p, len(log), reached)
        diverged = rng.randrange(len(log)) if log and rng.random() < 0.1 else -1
        for broker in (1, 2, 3):
            for offset, (pid, seq) in enumerate(log):
                if broker == 3 and offset == diverged:
                    pid, seq = 7, 50 + offset
                if pid >= 0 and rng.random() > 0.03:
                    h.replica(broker, p, offset, pid, seq)


def _late_commits(h: HistoryBuilder, rng: random.Random) -> None:
    """Some transactions' commits moved after every read (or never asked): precommitted reads."""
    for row in h.rows.get("txns", []):
        if row["fate"] != "aborted" and rng.random() < 0.15:
            row["t_commit"] = -1 if rng.random() < 0.3 else h.t + 1


def _group_commits(h: HistoryBuilder, rng: random.Random, t: Topic) -> None:
    for p, log in t.log.items():
        h.event("chaos-group", "committed", partition=p, offset=rng.randrange(len(log) + 1))


def _copies(h: HistoryBuilder, rng: random.Random) -> None:
    """An eos-copy stage's output of the builder's topic, as its drain read it: each input record
    the drain read copied once, rarely twice or never, below the stage's committed offsets."""
    drained = sorted({(r["partition"], r["offset"]) for r in h.rows["reads"]
                      if r["reader"] == "drain" and r["topic"] == h.topic and r["producer"] >= 0})
    out: dict[int, int] = {}
    for p, offset in drained:
        for _ in range(rng.choices((0, 1, 2), (0.15, 0.77, 0.08))[0]):
            h.copy(p, out.get(p, 0), offset)
            out[p] = out.get(p, 0) + 1
    for p in {p for p, _ in drained}:
        ends = [o for q, o in drained if q == p]
        upto = max(ends) + 1 if rng.random() < 0.7 else rng.randint(0, max(ends) + 1)
        h.copy_committed(p, upto, max(ends) + 1)


def random_txn_history(rng: random.Random, topics: int) -> tuple[HistoryBuilder, Named]:
    """`topics` independent transactional topics (the first copied by an eos-copy stage), and what
    the analyzer is told of their readers."""
    h, committed, contiguous = HistoryBuilder(), set(), set()
    for i in range(topics):
        h.topic = f"x{i}"
        t = Topic(h.topic, {p: [] for p in range(rng.randint(1, 3))})
        _transact(h, rng, t, [100 * i + k for k in range(rng.randint(1, 2))])
        for k in range(rng.randint(1, 2)):
            reader = f"consumer-{100 * i + k}"
            committed |= {reader} if rng.random() < 0.6 else set()
            _live(h, rng, t, reader, reader in committed)
        if rng.random() < 0.6:
            reader = f"consumer-{100 * i + 9}"
            committed.add(reader)
            contiguous.add(reader)
            _assigned(h, rng, t, reader)
        _drain_and_replicas(h, rng, t)
        if rng.random() < 0.5:
            _group_commits(h, rng, t)
    h.topic = "x0"
    _copies(h, rng)
    _late_commits(h, rng)
    h = h.replicas_dumped() if rng.random() < 0.9 else h
    return h, Named(frozenset(contiguous), frozenset(committed), copy_topic("x0"))
