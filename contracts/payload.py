"""The value every producer writes: it names its producer and seq and carries a checksum."""

from __future__ import annotations

import zlib
from functools import cache
from typing import NamedTuple

SEP = b"|"
# An eos-copy output value names its input position: producer COPY_BASE + the input partition, seq
# the input offset
COPY_BASE = 1_000_000


class Decoded(NamedTuple):
    producer: int
    seq: int
    checksum_ok: bool


@cache
def _pad(n: int) -> tuple[bytes, int]:
    """A pad of n bytes and its crc32, which every value with that pad continues from."""
    pad = b"x" * max(0, n)
    return pad, zlib.crc32(pad)


def encode(producer: int, seq: int, size: int = 64) -> bytes:
    """`producer|seq|crc|padding`, padded to at least `size` bytes; crc is the crc32 of padding then
    `producer|seq|`. Built as bytes with a cached pad and its crc, SEP written into the formats: it
    runs once per send, on the producer's hot path."""
    head = b"%d|%d|" % (producer, seq)
    pad, crc = _pad(size - len(head) - 9)
    return b"%s%08x|%s" % (head, zlib.crc32(head, crc), pad)


# A record's bytes in a log segment beyond its key and value, at most: a whole batch header (61
# bytes, as if the record were alone in its batch) and a record's own framing without headers (21).
RECORD_OVERHEAD_MAX = 61 + 21
KEY_MAX = 24  # a keyed producer's key, `producer-n`, at most


def record_bytes_max(size: int, keyed: bool) -> int:
    """An upper bound of one of our records' bytes in a log segment, for values of `size`."""
    return max(size, 32) + (KEY_MAX if keyed else 0) + RECORD_OVERHEAD_MAX


def seq_of(value: bytes) -> int:
    """The seq of a value `encode` made, unchecked: a producer's delivery report reads its own send
    back with it."""
    return int(value.split(SEP, 2)[1])


def decode(value: bytes | str | None) -> Decoded | None:
    """Parse a payload; None when it is not one of ours at all, checksum_ok False when it is
    damaged."""
    if value is None:
        return None
    raw = value.encode() if isinstance(value, str) else value
    parts = raw.split(SEP)
    if len(parts) != 4 or not parts[0].isdigit() or not parts[1].isdigit():
        return None
    producer, seq, crc, pad = parts
    ok = b"%08x" % zlib.crc32(producer + SEP + seq + SEP, zlib.crc32(pad)) == crc
    return Decoded(int(producer), int(seq), ok)
