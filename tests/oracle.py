"""A reference checker in plain Python, written from docs/history-format.md and docs/DESIGN.md's
anomaly table alone, never from reports/: the property tests hold the Spark checkers to it. It
judges every anomaly but timeout-duplicate (message timeouts)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from contracts.scenario import copy_input

Row = dict
MOVES = ("assign", "revoke", "lost")
COPY_BASE = 1_000_000  # a copy's producer: this plus its input record's partition


def _value(r: Row) -> tuple[int, int]:
    return r["producer"], r["seq"]


def _spot(r: Row) -> tuple[str, int, int]:
    return r["topic"], r["partition"], r["offset"]


def _reach(reads: Iterable[Row]) -> dict[tuple[str, int], int]:
    """The highest offset these reads got to in each partition."""
    reach: dict[tuple[str, int], int] = {}
    for r in reads:
        key = (r["topic"], r["partition"])
        reach[key] = max(reach.get(key, -1), r["offset"])
    return reach


@dataclass(frozen=True)
class Named:
    """What the analyzer is told beside the history: the live readers that read every partition
    from the beginning, those that read with read_committed, and an eos-copy stage's output."""

    contiguous: frozenset[str] = frozenset()
    committed: frozenset[str] = frozenset()
    copy_topic: str = ""


class Oracle:
    """One history's tables (the builder's rows) and the indexes its anomalies share."""

    def __init__(self, rows: dict[str, list[Row]], named: Named = Named()) -> None:
        self.named = named
        self.sends = rows.get("sends", [])
        self.reads = rows.get("reads", [])
        self.events = rows.get("events", [])
        self.txns = {(t["producer"], t["txn"]): t for t in rows.get("txns", [])}
        ends = [e for e in self.events if e["kind"] == "final-end"]
        self.drain_ran = bool(ends)
        self.end = {(e["topic"], e["partition"]): e["offset"] for e in ends}
        self.reached = {(e["topic"], e["partition"]) for e in ends if e["detail"] == "reached"}
        self.dumped = any(e["kind"] == "replicas-dumped" for e in self.events)
        intact = [r for r in self.reads if r["producer"] >= 0 and r["checksum_ok"]]
        self.copies = [r for r in intact if r["topic"] == named.copy_topic]
        self.ours = [r for r in intact if r["topic"] != named.copy_topic]
        # a replica's record counts below the drain's end offset of its partition, on a broker in
        # its last sampled ISR, only
        isr = {(m["topic"], m["partition"]): m["isr"] for m in sorted(rows.get("metadata", []),
                                                                      key=lambda m: m["t"])}
        self.replicas = [r for r in rows.get("replicas", []) if r["producer"] >= 0
                         and r["offset"]
                         < self.end.get((r["topic"], r["partition"]), r["offset"] + 1)
                         and str(r["broker"]) in (isr.get((r["topic"], r["partition"])) or
                                                  str(r["broker"])).split(",")]
        self.sent = {_value(s): s for s in self.sends}
        self.final = {_value(r) for r in self.ours if r["phase"] == "final"}
        self.live = {_value(r) for r in self.ours if r["phase"] == "live"}
        self.positions = self._positions()

    def _positions(self) -> dict[tuple[int, int], set]:
        """Each value's positions: its ack's offset, every read of it, every replica record of
        it."""
        at: dict[tuple[int, int], set] = defaultdict(set)
        for s in self.sends:
            if s["outcome"] == "ok" and s["offset"] >= 0:
                at[_value(s)].add(_spot(s))
        for r in [*self.ours, *self.replicas]:
            at[_value(r)].add(_spot(r))
        return at

    def counts(self) -> dict[str, int]:
        lost, lost_committed, unseen = self.lost_and_unseen()
        return {"lost-write": lost, "lost-committed": lost_committed, "unseen": unseen,
                "duplicate": self.duplicate() - len(self.epoch_duplicates()),
                "epoch-duplicate": len(self.epoch_duplicates()),
                "inconsistent-offset": self.mixed(self.positions),
                "nonmonotonic-send": self.nonmonotonic_send(), **self.polls(),
                "aborted-read": self.aborted_read(), "precommitted-read": self.precommitted(),
                "torn-transaction": self.torn(), "unexpected": self.unexpected(),
                "vanished-read": self.vanished_read(),
                "replica-divergence": self.replica_divergence(),
                "committed-unread": self.committed_unread(), **self.eos()}

    def fate(self, v: tuple[int, int]) -> str:
        """A value's transaction's fate: "" outside any; a transaction without a txns row has an
        unknown fate."""
        s = self.sent.get(v)
        if s is None or s.get("txn") is None or s["txn"] < 0:
            return ""
        row = self.txns.get((v[0], s["txn"]))
        return row["fate"] if row else "unknown"

    def lost_and_unseen(self) -> tuple[int, int, int]:
        """An ok send outside a transaction, or in a committed one, missing from the final read is
        lost when a contiguous reader (the drain, an assign-mode reader) read past its offset and no
        reader saw it, or when its partition was drained to the end and no replica holds it."""
        contiguous = {"drain", *self.named.contiguous}
        covered = _reach(r for r in self.ours if r["reader"] in contiguous)
        in_replica = {_value(r) for r in self.replicas}
        lost = lost_committed = unseen = 0
        for v, s in self.sent.items():
            fate = self.fate(v)
            if s["outcome"] != "ok" or v in self.final or fate in ("aborted", "unknown"):
                continue
            key = (s["topic"], s["partition"])
            passed = v not in self.live and 0 <= s["offset"] <= covered.get(key, -1)
            if passed or (key in self.reached and v not in in_replica and self.dumped):
                lost += fate == ""
                lost_committed += fate == "committed"
            elif v not in self.live:
                unseen += 1
        return lost, lost_committed, unseen

    def duplicate(self) -> int:
        return sum(len(spots) > 1 for spots in self.positions.values())

    def epoch_duplicates(self) -> set[tuple[int, int]]:
        """Duplicates whose every position the replicas hold under one producer id, each under an
        epoch of its own, an id no other producer wrote under."""
        owners: dict[object, set] = defaultdict(set)
        marks: dict[tuple, dict] = defaultdict(lambda: defaultdict(set))
        for r in self.replicas:
            owners[r.get("producer_id")].add(r["producer"])
            marks[_value(r)][_spot(r)].add((r.get("producer_id"), r.get("producer_epoch")))
        found = set()
        for v, spots in self.positions.items():
            held = marks.get(v, {})
            if len(spots) < 2 or set(held) != spots:
                continue
            pairs = set().union(*held.values())
            ids = {i for i, _ in pairs}
            epochs = {e for _, e in pairs}
            if (len(ids) == 1 and None not in ids and None not in epochs
                    and len(epochs) == len(spots) == len(pairs) and len(owners[min(ids)]) == 1):
                found.add(v)
        return found

    @staticmethod
    def mixed(positions: dict[tuple[int, int], set]) -> int:
        """Positions holding more than one value."""
        held: dict[tuple, set] = defaultdict(set)
        for v, spots in positions.items():
            for spot in spots:
                held[spot].add(v)
        return sum(len(vs) > 1 for vs in held.values())

    def nonmonotonic_send(self) -> int:
        """A send acked below the offset of the producer's send to that partition just before it, in
        send order."""
        by_line: dict[tuple, list[Row]] = defaultdict(list)
        for s in self.sends:
            if s["outcome"] == "ok" and s["offset"] >= 0:
                by_line[(s["producer"], s["topic"], s["partition"])].append(s)
        found = 0
        for line in by_line.values():
            offsets = [s["offset"] for s in sorted(line, key=lambda s: (s["t_invoke"], s["seq"]))]
            found += sum(b < a for a, b in zip(offsets, offsets[1:], strict=False))
        return found

    def polls(self) -> dict[str, int]:
        """Each live reader's records of a partition in poll order, within one assignment of that
        partition; with transactions a skip is a step of more than one place in the final log."""
        places = self._places() if self.txns else None
        skips = backs = 0
        for (reader, topic, partition, *_), steps in self._assignments().items():
            steps.sort(key=lambda r: (r["poll"], r["pos"], r["offset"]))
            seen = 1 if reader in self.named.committed else 0
            for a, b in zip(steps, steps[1:], strict=False):
                backs += b["offset"] <= a["offset"]
                if places is None:
                    skips += b["offset"] > a["offset"] + 1
                    continue
                before = places.get((topic, partition, a["offset"]), (None, None))[seen]
                after = places.get((topic, partition, b["offset"]), (None, None))[seen]
                skips += before is not None and after is not None and after - before > 1
        return {"poll-skip": skips, "nonmonotonic-poll": backs}

    def _places(self) -> dict[tuple[str, int, int], tuple[int, int | None]]:
        """Each position of the final log: its place among all its partition's records, and among
        those a read_committed reader sees (None: in an aborted or undecided transaction)."""
        log = sorted({(*_spot(r), _value(r)) for r in self.ours if r["phase"] == "final"})
        places, count_all, count_seen = {}, defaultdict(int), defaultdict(int)
        for topic, partition, offset, v in log:
            if (topic, partition, offset) in places:
                continue
            count_all[(topic, partition)] += 1
            hidden = self.fate(v) in ("aborted", "unknown")
            count_seen[(topic, partition)] += not hidden
            places[(topic, partition, offset)] = (
                count_all[(topic, partition)], None if hidden else count_seen[(topic, partition)])
        return places

    def _assignments(self) -> dict[tuple, list[Row]]:
        """A live reader's reads grouped by (reader, topic, partition, assignment): each assign,
        revoke or lost event of that partition, or of none in particular (partition -1), starts
        another."""
        moves = [e for e in self.events if e["kind"] in MOVES]
        timeline = sorted([(e["t"], 0, e) for e in moves]
                          + [(r["t"], 1, r) for r in self.reads if r["phase"] == "live"],
                          key=lambda x: (x[0], x[1], x[2].get("poll", 0), x[2].get("pos", 0),
                                         x[2]["offset"]))
        every: dict[str, int] = defaultdict(int)
        one: dict[tuple, int] = defaultdict(int)
        groups: dict[tuple, list[Row]] = defaultdict(list)
        for _, is_read, row in timeline:
            if not is_read and row["partition"] < 0:
                every[row["source"]] += 1
            elif not is_read:
                one[(row["source"], row["topic"], row["partition"])] += 1
            else:
                line = (row["reader"], row["topic"], row["partition"])
                groups[(*line, every[row["reader"]], one[line])].append(row)
        return groups

    def _committed_reads(self) -> list[Row]:
        if not (self.txns and self.named.committed):
            return []
        return [r for r in self.ours
                if r["phase"] == "live" and r["reader"] in self.named.committed]

    def aborted_read(self) -> int:
        """A read of a value whose send failed; a read_committed reader's of an aborted one."""
        cols = ("reader", "phase", "topic", "partition", "offset", "producer", "seq")
        failed = {v for v, s in self.sent.items() if s["outcome"] == "fail"}
        rows = {tuple(r[c] for c in cols) for r in self.ours if _value(r) in failed}
        rows |= {tuple(r[c] for c in cols) for r in self._committed_reads()
                 if self.fate(_value(r)) == "aborted"}
        return len(rows)

    def precommitted(self) -> int:
        """A read_committed reader's read of a value whose transaction (with a txns row) did not
        abort, before its producer asked to commit it, or with no commit asked at all."""
        found = 0
        for r in self._committed_reads():
            s = self.sent.get(_value(r))
            row = self.txns.get((r["producer"], s["txn"])) if s else None
            if row and row["fate"] != "aborted":
                found += row["t_commit"] < 0 or r["t"] < row["t_commit"]
        return found

    def torn(self) -> int:
        """(reader, transaction) pairs: a read_committed assign-mode reader read part of a committed
        transaction and read past another of its acked values in that value's partition."""
        readers = self.named.committed & self.named.contiguous
        members: dict[tuple[int, int], list[Row]] = defaultdict(list)
        for v, s in self.sent.items():
            if self.fate(v) == "committed" and s["offset"] >= 0:
                members[(v[0], s["txn"])].append(s)
        found = 0
        for reader in readers:
            reads = [r for r in self._committed_reads() if r["reader"] == reader]
            got = {_value(r) for r in reads}
            reach = _reach(reads)
            touched = {(v[0], self.sent[v]["txn"]) for v in got if v in self.sent}
            for txn in touched & set(members):
                found += any(_value(s) not in got and reach.get((s["topic"], s["partition"]), -1)
                             > s["offset"] for s in members[txn])
        return found

    def committed_unread(self) -> int:
        """A final read's position below its group's final committed offset whose value no live
        member read, outside any aborted or undecided transaction."""
        committed = {(e["topic"], e["partition"]): e["offset"] for e in self.events
                     if e["kind"] == "committed"}
        return len({(*_spot(r), _value(r)) for r in self.ours
                    if r["phase"] == "final" and _value(r) not in self.live
                    and r["offset"] < committed.get((r["topic"], r["partition"]), -1)
                    and self.fate(_value(r)) not in ("aborted", "unknown")})

    def eos(self) -> dict[str, int]:
        """An input position copied to two output offsets; an input record below the stage's
        committed offset, outside any aborted or undecided transaction, never copied."""
        if not self.named.copy_topic:
            return {"eos-duplicate": 0, "eos-loss": 0}
        at: dict[tuple[int, int], set] = defaultdict(set)
        for r in self.copies:
            at[(r["producer"] - COPY_BASE, r["seq"])].add((r["partition"], r["offset"]))
        upto = {e["partition"]: e["offset"] for e in self.events if e["kind"] == "copy-committed"}
        source = copy_input(self.named.copy_topic)
        inputs = {(r["partition"], r["offset"]) for r in self.ours
                  if r["phase"] == "final" and r["topic"] == source
                  and r["offset"] < upto.get(r["partition"], -1)
                  and self.fate(_value(r)) not in ("aborted", "unknown")}
        return {"eos-duplicate": sum(len(spots) > 1 for spots in at.values()),
                "eos-loss": len(inputs - set(at))}

    def unexpected(self) -> int:
        foreign = [r for r in self.reads if r["producer"] < 0 or not r["checksum_ok"]]
        never_sent = [r for r in self.ours if _value(r) not in self.sent] if self.drain_ran else []
        return len(foreign) + len(never_sent)

    def vanished_read(self) -> int:
        """A value of ours read live and not by the complete final read of the partition it was read
        in."""
        found = 0
        for v in self.live - self.final:
            s = self.sent.get(v)
            first = min((r["partition"] for r in self.ours if _value(r) == v), default=None)
            found += s is not None and (s["topic"], first) in self.reached
        return found

    def replica_divergence(self) -> int:
        held: dict[tuple, set] = defaultdict(set)
        for r in self.replicas:
            held[_spot(r)].add(_value(r))
        return sum(len(vs) > 1 for vs in held.values())


def counts(rows: dict[str, Iterable[Row]], named: Named = Named()) -> dict[str, int]:
    """The reference counts of one history."""
    return Oracle({t: list(rs) for t, rs in rows.items()}, named).counts()
