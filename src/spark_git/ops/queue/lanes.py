"""Lanes: the ready entries split into groups that can be gated and landed independently. Pure: the
drain hands in each entry's changed paths (`git diff --name-only base...head`) and `[queue] shared`.

Two entries share a lane when their changed paths overlap, transitively: the same path, or one path
a directory of the other (a file `a` and a file `a/b` cannot both land). An entry touching a shared
path (a glob, e.g. "pyproject.toml", "uv.lock") can change how any other entry builds or tests, so
it is tied to every entry of the window, ahead of it and behind it: the whole window is one lane
(docs/decisions.md: nothing that could interact is gated apart)."""

from __future__ import annotations

from collections.abc import Sequence
from fnmatch import fnmatchcase

Lane = list[int]  # entry indexes, in queue order
RECENT = 32  # the last tasks the queue settled whose culprit share says whether a batch is split (`[queue] lanes_from`)


def partition(changed: Sequence[frozenset[str]], shared: Sequence[str] = ()) -> list[Lane]:
    """The lanes of the entries `changed` describes (index i: entry i's changed paths, queue order),
    ordered by their first entry; queue order is kept within a lane."""
    n = len(changed)
    if any(touches_shared(paths, shared) for paths in changed):
        return [list(range(n))] if n else []
    parent = list(range(n))
    files: dict[str, int] = {}  # a changed path -> the first entry that changes it
    dirs: dict[str, list[int]] = {}  # a directory holding changed paths -> the entries with one there (unrelated to each other)
    for i, paths in enumerate(changed):
        for p in paths:
            for owner in (files.get(p), *dirs.get(p, ()), *(files.get(d) for d in _dirs_of(p))):
                if owner is not None:
                    _union(parent, owner, i)
            files.setdefault(p, i)
            for d in _dirs_of(p):
                dirs.setdefault(d, []).append(i)
    lanes: dict[int, Lane] = {}
    for i in range(n):
        lanes.setdefault(_root(parent, i), []).append(i)
    return sorted(lanes.values(), key=lambda lane: lane[0])


def grouped(found: Sequence[Lane], most: int) -> list[Lane]:
    """The lanes merged into at most `most` groups (one per runner): each lane after the first `most`
    joins the smallest group so far (the first of equals); each group in queue order. A group of
    lanes is still independent of the other groups."""
    out: list[Lane] = []
    for lane in found:
        if len(out) < most:
            out.append(list(lane))
        else:
            min(out, key=len).extend(lane)
    return [sorted(g) for g in out]


def worth_splitting(settled: Sequence[bool], share: float) -> bool:
    """Whether to split a batch into lanes: `settled` says for each task the queue landed or failed, in
    order, whether it was a culprit; split once at least `share` of the last RECENT were (0: always).
    A lane landing after another pays a combined recheck, so lanes only win when batches often fail
    (scripts/sim_queue: below about 15 % culprits plain speculation lands more)."""
    recent = settled[-RECENT:]
    return share <= 0 or (bool(recent) and sum(recent) >= share * len(recent))


def touches_shared(paths: frozenset[str], shared: Sequence[str]) -> bool:
    """A glob matches the whole repository path (fnmatch: `*` also crosses `/`)."""
    return any(fnmatchcase(p, g) for p in paths for g in shared)


def _dirs_of(path: str) -> list[str]:
    parts = path.split("/")[:-1]
    return ["/".join(parts[: k + 1]) for k in range(len(parts))]


def _root(parent: list[int], i: int) -> int:
    while parent[i] != i:
        parent[i] = parent[parent[i]]  # path halving
        i = parent[i]
    return i


def _union(parent: list[int], a: int, b: int) -> None:
    ra, rb = _root(parent, a), _root(parent, b)
    if ra != rb:
        parent[max(ra, rb)] = min(ra, rb)
