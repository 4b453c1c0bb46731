"""Small histories built by hand with the public builder: a clean baseline that each test bends into
exactly one anomaly."""

from __future__ import annotations

from kchaos.history_builder import HistoryBuilder

TOPIC = "chaos"


class History(HistoryBuilder):
    """The public builder, with the tests' default error for a send that did not end ok."""

    def send(self, producer: int, seq: int, partition: int, offset: int | None = None,
             outcome: str = "ok", error: str = "X", took_ns: int = 5_000_000,
             txn: int = -1) -> History:
        super().send(producer, seq, partition, offset, outcome, error, took_ns, txn)
        return self


def clean(partitions: int = 2, per_producer: int = 6, producers: int = 2,
          brokers: int = 3) -> History:
    """Every send acked, read once live by consumer-0 and once by the drain, present on every
    replica."""
    h = History()
    h.event("consumer-0", "assign")
    offsets = {p: 0 for p in range(partitions)}
    placed = []
    for pid in range(producers):
        for seq in range(per_producer):
            p = (pid + seq) % partitions
            h.send(pid, seq, p, offsets[p])
            placed.append((p, offsets[p], pid, seq))
            offsets[p] += 1
    for p, off, pid, seq in sorted(placed):
        h.read("consumer-0", p, off, pid, seq, poll=1 + off // 2)
    for p, off, pid, seq in sorted(placed):
        h.read("drain", p, off, pid, seq, poll=1)
        for b in range(1, brokers + 1):
            h.replica(b, p, off, pid, seq)
    for p in range(partitions):
        h.drain_end(p, offsets[p])
    return h.replicas_dumped()


# Producer 0's transactions: (txn, fate, [(seq, partition, offset)]); each leaves a marker at the
# next offset.
TXNS = [(0, "committed", [(0, 0, 0), (1, 1, 0)]), (1, "aborted", [(2, 0, 2)]),
        (2, "committed", [(3, 0, 4), (4, 1, 2)]), (3, "committed", [(5, 1, 4)])]


def transactional(committed_reads: bool = True, two_topics: bool = False) -> History:
    """Producer 0 sends in transactions (one aborted) over two partitions; `consumer-0`
    (read_committed) reads the committed values, `consumer-1` (read_uncommitted) and the drain read
    every record, the markers' offsets hold none. With `committed_reads=False` consumer-0 reads
    nothing (a test adds its own reads); with `two_topics`, what TXNS puts in partition 1 is in
    partition 0 of a second topic (transactions that span topics)."""
    h = History()

    def at(p: int) -> int:
        h.topic = f"{TOPIC}-2" if two_topics and p == 1 else TOPIC
        return 0 if two_topics else p
    h.event("consumer-0", "assign").event("consumer-1", "assign")
    for txn, fate, values in TXNS:
        for seq, p, off in values:
            h.send(0, seq, at(p), off, txn=txn)
        h.transaction(0, txn, fate, asked_commit=fate == "committed")
    records = sorted((p, off, seq, fate) for _, fate, values in TXNS for seq, p, off in values)
    for reader in ("consumer-0", "consumer-1", "drain"):
        for p, off, seq, fate in records:
            if reader != "consumer-0" or (committed_reads and fate == "committed"):
                h.read(reader, at(p), off, 0, seq)
    for p, off, seq, _ in records:
        for b in (1, 2, 3):
            h.replica(b, at(p), off, 0, seq)
    for p in (0, 1):
        partition = at(p)
        h.drain_end(partition, 6, topic=h.topic)
    h.topic = TOPIC
    return h.replicas_dumped()


def eos(behind: int = 0) -> History:
    """`clean()`'s log copied by an eos-copy stage: each input record once in the output's same
    partition (every third output offset holds a transaction marker), the stage's committed offsets
    at the input's ends (`behind` records short of them in partition 0, whose copies are then
    missing too), the output drained to its end."""
    h = clean()
    ends = {0: 6, 1: 6}
    for p, end in ends.items():
        copied = end - behind if p == 0 else end
        for off in range(copied):
            h.copy(p, off + off // 2, off)
        h.copy_committed(p, copied, end)
        h.drain_end(p, end + end // 2, topic=f"{TOPIC}-copy")
    return h
