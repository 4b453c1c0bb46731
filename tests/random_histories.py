"""Random histories for the oracle's property tests: producers, partitions and readers whose logs
hold every anomaly the reference checker judges, written with the public builder."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from kchaos.history_builder import HistoryBuilder

Record = tuple[int, int]  # (producer, seq); producer -1: a record that is not ours
FOREIGN: Record = (-1, -1)


@dataclass
class Topic:
    """One topic's sends and the log they left, before the history is written."""

    name: str
    producers: list[int]
    log: dict[int, list[Record]]
    # producer, seq, partition, outcome
    sends: list[tuple[int, int, int, str]] = field(default_factory=list)


def _produce(rng: random.Random, t: Topic) -> None:
    """Sends in a random order (so seq order is not send order), each written once, twice, late or
    not at all."""
    order = [(pid, seq) for pid in t.producers for seq in range(rng.randint(3, 8))]
    rng.shuffle(order)
    for pid, seq in order:
        p = rng.randrange(len(t.log))
        outcome = rng.choices(("ok", "fail", "info"), (0.84, 0.08, 0.08))[0]
        t.sends.append((pid, seq, p, outcome))
        chance = {"ok": 0.96, "info": 0.5, "fail": 0.08}[outcome]
        if rng.random() >= chance:
            continue  # never written (a lost write, if it was acked)
        log = t.log[p]
        # a batch written late
        log.insert(len(log) - 1 if log and rng.random() < 0.08 else len(log), (pid, seq))
        if rng.random() < 0.05:
            log.append((pid, seq))  # a retried batch written again
    for p, log in t.log.items():
        extras = [FOREIGN] if rng.random() < 0.1 else []
        if rng.random() < 0.1:
            extras.append((t.producers[0] + 9, p))  # a value no producer sent
        for record in extras:
            log.insert(rng.randrange(len(log) + 1), record)


def _acks(h: HistoryBuilder, rng: random.Random, t: Topic) -> None:
    """The send rows in send order; an ok send's offset is where the log holds it (none, or a wrong
    one, rarely)."""
    for pid, seq, p, outcome in t.sends:
        log = t.log[p]
        if outcome != "ok":
            h.send(pid, seq, p, outcome=outcome, error="X")
            continue
        offset = log.index((pid, seq)) if (pid, seq) in log else len(log)
        if rng.random() < 0.05:
            offset = -1  # acks=0
        elif rng.random() < 0.03:
            offset = rng.randrange(len(log) + 1)
        h.send(pid, seq, p, offset)


def _drain_and_replicas(h: HistoryBuilder, rng: random.Random, t: Topic) -> None:
    """The final read of each partition (sometimes cut short, sometimes missing a record) and three
    replicas."""
    for p, log in t.log.items():
        reached = rng.random() > 0.15
        stop = len(log) if reached else rng.randrange(len(log) + 1)
        for offset, (pid, seq) in enumerate(log[:stop]):
            if rng.random() > 0.04:
                h.read("drain", p, offset, pid, seq, checksum_ok=rng.random() > 0.02)
        h.drain_end(p, len(log), reached)
        diverged = rng.randrange(len(log)) if log and rng.random() < 0.1 else -1
        for broker in (1, 2, 3):
            # the last is above the end
            for offset, (pid, seq) in enumerate(log + [(t.producers[0], 99)]):
                if broker == 3 and offset == diverged:
                    pid, seq = t.producers[0] + 9, 50 + offset
                if rng.random() > 0.03:
                    h.replica(broker, p, offset, pid, seq)


def _live(h: HistoryBuilder, rng: random.Random, t: Topic, reader: str) -> None:
    """A group member that gains and loses partitions one at a time (or all at once), polling
    records that it sometimes skips, reads again, or gets out of order within a poll."""
    at = {p: 0 for p in rng.sample(sorted(t.log), rng.randint(1, len(t.log)))}
    for p in at:
        h.event(reader, "assign", partition=p)
    for _ in range(rng.randint(2, 8)):
        move = rng.choices(("poll", "gain", "lose", "all"), (0.6, 0.15, 0.15, 0.1))[0]
        if move == "poll":
            h.poll(reader, *_batch(rng, t, at))
        elif move in ("gain", "lose"):
            move_partition(h, rng, t.log, reader, at, move)
        elif move == "all":
            h.event(reader, "assign")
            at = {p: rng.randrange(pos + 1) for p, pos in at.items()}


def move_partition(h: HistoryBuilder, rng: random.Random, logs: dict[int, list], reader: str,
                   at: dict[int, int], move: str) -> None:
    """A group member gains a partition it lacks (at a random position) or loses one it has."""
    if move == "gain" and (free := sorted(set(logs) - set(at))):
        p = rng.choice(free)
        h.event(reader, "assign", partition=p)
        at[p] = rng.randrange(len(logs[p]) + 1)
    elif move == "lose" and at:
        p = rng.choice(sorted(at))
        h.event(reader, rng.choice(("revoke", "lost")), partition=p)
        del at[p]


def _batch(rng: random.Random, t: Topic, at: dict[int, int]) -> list[tuple[int, int, int, int]]:
    records = []
    for p in sorted(at):
        for _ in range(rng.randint(1, 3)):
            offset = at[p] + rng.choices((0, 1, -1), (0.85, 0.1, 0.05))[0]
            if 0 <= offset < len(t.log[p]):
                records.append((p, offset, *t.log[p][offset]))
                at[p] = offset + 1
    if len(records) > 1 and rng.random() < 0.2:
        i = rng.randrange(len(records) - 1)
        records[i], records[i + 1] = records[i + 1], records[i]
    return records


def random_history(rng: random.Random, topics: int) -> HistoryBuilder:
    """`topics` independent topics, each with its own producers and live readers, and one replica
    dump (mostly)."""
    h = HistoryBuilder()
    for i in range(topics):
        h.topic = f"t{i}"
        t = Topic(h.topic, [10 * i + k for k in range(rng.randint(1, 2))],
                  {p: [] for p in range(rng.randint(1, 3))})
        _produce(rng, t)
        _acks(h, rng, t)
        for k in range(rng.randint(0, 2)):
            _live(h, rng, t, f"consumer-{10 * i + k}")
        _drain_and_replicas(h, rng, t)
    return h.replicas_dumped() if rng.random() < 0.9 else h
