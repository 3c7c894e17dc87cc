"""Conflicts a configured merge driver hides: `merge=union`, `merge=ours` or a custom driver settles a
file where both sides changed the same lines of their merge base, and git reports nothing. Found from
the two sides' diffs against the merge base (no merge is run, nothing is written), for the files whose
`merge` attribute names such a driver, read where git's merges read it: in this worktree."""

from __future__ import annotations

import re
from pathlib import Path

from spark_git.core.git import Git
from spark_git.core.model import Model

# `merge` attribute values that keep git's own conflict (or are its default): nothing hidden
KEEPS_CONFLICTS = frozenset({"unspecified", "set", "unset", "text", "binary"})
HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@", re.MULTILINE)


class Combined(Model):
    path: str
    driver: str  # the `merge` attribute's value: union, ours, a custom driver's name
    lines: list[tuple[int, int]]  # lines of the merge base both sides changed (first, last; 1-based)

    def spans(self) -> str:
        return ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in self.lines)


def declared(worktree: Path, common_dir: Path) -> bool:
    """Does the worktree's top `.gitattributes` or the repository's info/attributes mention a `merge`
    attribute? Files read, no git process (status counts them). A driver set only in a nested
    `.gitattributes` is not seen here (docs/decisions.md)."""
    for f in (worktree / ".gitattributes", common_dir / "info" / "attributes"):
        try:
            if "merge" in f.read_text(errors="replace"):
                return True
        except OSError:
            continue
    return False


def combined(git: Git, ours: str, theirs: str) -> list[Combined]:
    """The files a merge of `ours` and `theirs` would combine through a driver where git's own merge
    would stop on a conflict, with the base lines both sides touched; [] when there are none."""
    both = sorted(git.changed_paths(ours, theirs) & git.changed_paths(theirs, ours))
    drivers = hiding_drivers(git, both) if both else {}
    out = []
    for path, driver in drivers.items():
        lines = overlap(base_ranges(git, theirs, ours, path), base_ranges(git, ours, theirs, path))
        if lines:
            out.append(Combined(path=path, driver=driver, lines=lines))
    return out


def hiding_drivers(git: Git, paths: list[str]) -> dict[str, str]:
    """path → driver, for the paths whose `merge` attribute names a driver that settles conflicts."""
    words = git.run("check-attr", "-z", "merge", "--", *paths).stdout.split("\0")
    found = {words[i]: words[i + 2] for i in range(0, len(words) - 2, 3)}
    return {p: v for p, v in found.items() if v not in KEEPS_CONFLICTS}


Span = tuple[int, int]  # [first, end) of base lines replaced; first == end: an insertion before `first`


def base_ranges(git: Git, base_side: str, head: str, path: str) -> list[Span]:
    """What `head` changed in `path` since it forked from `base_side`, as spans of merge-base lines."""
    diff = git.run("diff", "-U0", "--no-color", "--no-ext-diff", "--no-renames", f"{base_side}...{head}", "--", path).stdout
    spans = []
    for start, count in HUNK.findall(diff):
        n = 1 if count == "" else int(count)
        first = int(start) if n else int(start) + 1  # `-a,0`: inserted after line a
        spans.append((first, first + n))
    return spans


def overlap(a: list[Span], b: list[Span]) -> list[tuple[int, int]]:
    """Base lines touched by both sides, as git's merge sees it: changes that overlap or adjoin conflict."""
    hits = sorted({(min(x[0], y[0]), max(x[1], y[1], min(x[0], y[0]) + 1) - 1) for x in a for y in b if x[0] <= y[1] and y[0] <= x[1]})
    merged: list[tuple[int, int]] = []
    for first, last in hits:
        if merged and first <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], last))
        else:
            merged.append((first, last))
    return merged
