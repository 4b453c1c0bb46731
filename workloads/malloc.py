"""How a process of the harness holds freed memory: bounded glibc malloc arenas, and handing freed
memory back."""

from __future__ import annotations

import ctypes

# glibc gives each of librdkafka's threads an arena of its own, which keeps a burst's freed memory
# resident; two arenas bound that (glibc's M_ARENA_MAX option of mallopt). What a burst freed inside
# them (a producer's sends queued while a partition had no leader) stays resident until malloc_trim
# hands it back.
M_ARENA_MAX, ARENAS = -8, 2
LIBC = ctypes.CDLL(None)


def bound_malloc_arenas() -> None:
    """Let this process's threads share ARENAS glibc malloc arenas (set before they allocate)."""
    LIBC.mallopt(M_ARENA_MAX, ARENAS)


def trim_malloc() -> None:
    """Return the free memory of every glibc arena to the kernel."""
    LIBC.malloc_trim(0)
