"""Which cluster events a run shows (scenario `provokes`): from the sampled metadata, the
consumers' events and what share group members were handed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from contracts.results import ShareDeliveries

if TYPE_CHECKING:
    import pandas as pd


def from_metadata(meta: pd.DataFrame) -> list[str]:
    """isr-shrink (an ISR smaller than the largest seen in its topic), leader-election (a
    partition's leader changed), unclean-election (a leader elected from outside the ISR sampled
    just before), controller-change."""
    seen: set[str] = set()
    if meta.empty:
        return []
    sizes = meta["isr"].fillna("").map(lambda s: len([x for x in s.split(",") if x]))
    if (sizes < sizes.groupby(meta["topic"]).transform("max")).any():
        seen.add("isr-shrink")
    for _, g in meta.sort_values("t").groupby(["topic", "partition"]):
        before_leader, before_isr = None, set()
        for leader, isr in zip(g["leader"], g["isr"].fillna(""), strict=True):
            if before_leader is not None and leader != before_leader and leader >= 0:
                seen.add("leader-election")
                if before_isr and str(leader) not in before_isr:
                    seen.add("unclean-election")
            before_leader, before_isr = leader, {x for x in isr.split(",") if x}
    controllers = [c for c in meta.sort_values("t")["controller"] if c is not None and c >= 0]
    if any(a != b for a, b in zip(controllers, controllers[1:], strict=False)):
        seen.add("controller-change")
    return sorted(seen)


def from_share(share: dict[str, int] | None) -> list[str]:
    """share-redelivery: a record handed out again that no member had released, so a member died,
    was cut off or was paused past its acquisition lock."""
    return ["share-redelivery"] if share and ShareDeliveries(**share).held > 0 else []
