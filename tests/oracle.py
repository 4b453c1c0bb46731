"""A reference checker in plain Python, written from docs/history-format.md and docs/DESIGN.md's
anomaly table alone, never from reports/: the property tests hold the Spark checkers to it. It
judges histories without transactions, eos-copy stages, group commits or message timeouts."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

Row = dict
MOVES = ("assign", "revoke", "lost")


def _value(r: Row) -> tuple[int, int]:
    return r["producer"], r["seq"]


def _spot(r: Row) -> tuple[str, int, int]:
    return r["topic"], r["partition"], r["offset"]


class Oracle:
    """One history's tables (the builder's rows) and the indexes its anomalies share."""

    def __init__(self, rows: dict[str, list[Row]]) -> None:
        self.sends = rows.get("sends", [])
        self.reads = rows.get("reads", [])
        self.events = rows.get("events", [])
        ends = [e for e in self.events if e["kind"] == "final-end"]
        self.drain_ran = bool(ends)
        self.end = {(e["topic"], e["partition"]): e["offset"] for e in ends}
        self.reached = {(e["topic"], e["partition"]) for e in ends if e["detail"] == "reached"}
        self.dumped = any(e["kind"] == "replicas-dumped" for e in self.events)
        self.ours = [r for r in self.reads if r["producer"] >= 0 and r["checksum_ok"]]
        # a replica's record counts below the drain's end offset of its partition only
        self.replicas = [r for r in rows.get("replicas", []) if r["producer"] >= 0
                         and r["offset"]
                         < self.end.get((r["topic"], r["partition"]), r["offset"] + 1)]
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
        lost, unseen = self.lost_and_unseen()
        return {"lost-write": lost, "unseen": unseen, "duplicate": self.duplicate(),
                "inconsistent-offset": self.mixed(self.positions),
                "nonmonotonic-send": self.nonmonotonic_send(), **self.polls(),
                "aborted-read": self.aborted_read(), "unexpected": self.unexpected(),
                "vanished-read": self.vanished_read(),
                "replica-divergence": self.replica_divergence()}

    def lost_and_unseen(self) -> tuple[int, int]:
        """An ok send missing from the final read is lost when a contiguous reader (the drain) read
        past its offset and no reader saw it, or when its partition was drained to the end and no
        replica holds it."""
        covered: dict[tuple[str, int], int] = {}
        for r in self.ours:
            if r["reader"] == "drain":
                key = (r["topic"], r["partition"])
                covered[key] = max(covered.get(key, -1), r["offset"])
        in_replica = {_value(r) for r in self.replicas}
        lost = unseen = 0
        for v, s in self.sent.items():
            if s["outcome"] != "ok" or v in self.final:
                continue
            key = (s["topic"], s["partition"])
            passed = v not in self.live and 0 <= s["offset"] <= covered.get(key, -1)
            if passed or (key in self.reached and v not in in_replica and self.dumped):
                lost += 1
            elif v not in self.live:
                unseen += 1
        return lost, unseen

    def duplicate(self) -> int:
        return sum(len(spots) > 1 for spots in self.positions.values())

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
        partition."""
        skips = backs = 0
        for steps in self._assignments().values():
            steps.sort(key=lambda r: (r["poll"], r["pos"], r["offset"]))
            for a, b in zip(steps, steps[1:], strict=False):
                skips += b["offset"] > a["offset"] + 1
                backs += b["offset"] <= a["offset"]
        return {"poll-skip": skips, "nonmonotonic-poll": backs}

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

    def aborted_read(self) -> int:
        cols = ("reader", "phase", "topic", "partition", "offset", "producer", "seq")
        failed = {v for v, s in self.sent.items() if s["outcome"] == "fail"}
        return len({tuple(r[c] for c in cols) for r in self.ours if _value(r) in failed})

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


def counts(rows: dict[str, Iterable[Row]]) -> dict[str, int]:
    """The reference counts of one history."""
    return Oracle({t: list(rs) for t, rs in rows.items()}).counts()
