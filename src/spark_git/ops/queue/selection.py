"""The batch a drain takes, pure: the longest run of ready entries (queue order) with the first one's
base branch, at most `[queue] batch_max`. drain.py's `_run` calls it with the bases from the store;
scripts/sim_queue with its own."""

from __future__ import annotations

from collections.abc import Sequence


def run_length(bases: Sequence[str | None], batch_max: int) -> int:
    """How many of the ready entries (their base branches, queue order) go into the next batch."""
    if not bases:
        return 0
    k = 1
    while k < min(len(bases), batch_max) and bases[k] == bases[0]:
        k += 1
    return k
