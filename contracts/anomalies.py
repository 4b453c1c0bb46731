"""Every anomaly the checkers look for: its name, how a count of it reads, and its definition. The
one list of them: the checkers and the guarantee rules register under these names, in this order,
and docs/DESIGN.md's table is checked against it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Kind:
    """One anomaly: its name, a count's phrase in a headline, and what it is."""

    name: str
    phrase: str
    definition: str
    transactional: bool = False  # only a run with transactions or an eos-copy stage can show it
    share: bool = False  # only a run with share consumers (`workload: share`) can show it

    def counted(self, n: int) -> str:
        """'3 values written twice', '1 value written twice': the phrase's first plural noun agrees
        with n."""
        if n == 1:
            words = self.phrase.split(" ")
            first = next(i for i, w in enumerate(words) if w.endswith("s"))
            return " ".join(["1", *words[:first], words[first][:-1], *words[first + 1:]])
        return f"{n:,} {self.phrase}"


KINDS = (
    Kind('lost-write', 'acknowledged writes lost',
         "an `ok` send outside any transaction that no reader saw although a contiguous reader "
         "(the drain, an assign-mode reader) read past its offset, or that a complete final read "
         "and every replica lack; one a live consumer read and the log then lost (an unclean "
         "election) counts too. A subscribe-mode reader's poll past it proves nothing alone: its "
         "group may have skipped the offset (Jepsen counts any poll past it)"),
    Kind('lost-committed', 'writes of committed transactions lost',
         'the same, for a send whose transaction committed (a send of an aborted or undecided '
         'transaction may be absent)', True),
    Kind('unseen', 'acknowledged writes never read back (not provably lost)',
         'an `ok` send (of a committed transaction, if in one) not read by the end, where the '
         'final read did not reach the end of the log (unknown, not false)'),
    Kind('retention-breach', 'acknowledged writes deleted within retention',
         "an `ok` send (of a committed transaction, if in one) below its partition's log start "
         "offset at the drain's end (read before it went or not), although retention kept it "
         "when it went: the bytes after it then are below the topic's `retention.bytes` and its "
         "age below `retention.ms` (then: when the sampler first saw the log start past it, else "
         "the drain's end)"),
    Kind('duplicate', 'values written twice',
         "one value at more than one position (an ack's offset counts)"),
    Kind('timeout-duplicate', 'values re-sent after a message timeout and written twice',
         'a duplicate of a value its producer was still awaiting when another of its messages '
         'timed out: librdkafka then re-sends under a bumped epoch, which the broker cannot '
         'de-duplicate'),
    Kind('epoch-duplicate', 'values re-sent under a new producer epoch',
         "a duplicate whose every copy the replicas hold under one producer id, each under an "
         "epoch of its own, an id no other producer wrote under: the client bumped its epoch and "
         "re-sent what the log already held (after an out-of-order sequence, say)"),
    Kind('inconsistent-offset', 'offsets holding two different values',
         'one position holding different values across acks, reads and replicas'),
    Kind('nonmonotonic-send', 'sends acknowledged out of order',
         "a producer's send in a partition acked at a lower offset than its send there just before "
         "it, in send order (`t_invoke`, then `seq`)"),
    Kind('poll-skip', 'consumer polls that skipped records',
         "one consumer, one partition within one assignment of it, consecutive records (in poll "
         "order, and in order within a poll) skipping an offset; with transactions a skip is "
         "judged by the record's place among the final log's records as the reader's isolation "
         "level sees them (markers and aborted records hold offsets)"),
    Kind('nonmonotonic-poll', 'consumer polls that went back',
         'one consumer, one partition within one assignment of it, consecutive records (in poll '
         'order, and in order within a poll) going back'),
    Kind('aborted-read', 'reads of failed sends or aborted transactions',
         "a value read whose send definitely failed, or that a read_committed reader read from an "
         "aborted transaction (Jepsen's G1a)"),
    Kind('precommitted-read', 'reads of transactions before their commit was asked for',
         "a read_committed reader read a transaction's value before its producer asked to commit "
         "it (a transaction with no txns row is not judged)", True),
    Kind('torn-transaction', 'committed transactions seen in part',
         'a read_committed reader that reads every partition from the beginning read part of a '
         'committed transaction and read past the rest', True),
    Kind('unexpected', 'reads of values no producer sent',
         'a value read that no producer attempted (in a run that reached its drain), or a bad '
         'checksum'),
    Kind('vanished-read', 'records read live and gone from the final log',
         'a value a live consumer read that a complete final read lacks'),
    Kind('replica-divergence', 'offsets where replicas disagree',
         "after heal, two replicas holding different values at one offset below the drain's end"),
    Kind('committed-unread', 'records below committed offsets no member read',
         "a record below the group's final committed offset that no live member read "
         "(at-least-once broken)"),
    Kind('eos-duplicate', 'input records copied twice by the exactly-once stage',
         'an input record whose copy the read_committed drain of an eos-copy output found at two '
         'offsets', True),
    Kind('eos-loss', 'input records the exactly-once stage committed but never copied',
         "an input record (of the stage's input topic) below the eos-copy group's final committed "
         "offset with no copy in the output", True),
    Kind('metadata-lost', 'metadata records lost in a migration',
         "an entry of the cluster's metadata (a topic, its partition count, a partition's "
         "replicas, a config set on a topic, a SCRAM user's credential) that a `migrate` op read "
         "before it began and not once it ended"),
    Kind('share-lost', 'records a share group finished with unprocessed',
         "an `ok` send the share group is done with (below its final share-partition start offset, "
         "or in a share-partition with no lag left) that no member accepted or rejected, and that "
         "no member saw delivered up to the delivery limit (KIP-932's at-least-once broken)",
         share=True),
    Kind('share-stuck', 'records a share group never delivered for good',
         "an `ok` send in a share-partition that still had lag after the final share consumer "
         "idled past the lock duration, that no member accepted or rejected or saw at the "
         "delivery limit (liveness)", share=True),
    Kind('share-redelivered-after-accept', 'records delivered again after an accept',
         "a record delivered to another member, with a higher delivery count, after the broker "
         "confirmed a member's accept of it", share=True),
    Kind('share-concurrent', 'records accepted after another member got them',
         "a record delivered to another member with a higher delivery count before a member's "
         "accept of an earlier delivery succeeded: the broker let a member accept a record it had "
         "handed to another", share=True),
    Kind('share-delivery-limit', 'deliveries past the delivery limit',
         "a delivery whose delivery count exceeds the group's `group.share.delivery.count.limit`",
         share=True),
)
ANOMALIES: tuple[str, ...] = tuple(k.name for k in KINDS)
BY_NAME = {k.name: k for k in KINDS}
