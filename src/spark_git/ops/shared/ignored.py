"""Ignored files a checkout would delete. Moving a worktree to a commit that adds a path overwrites an
ignored file there (or removes it to make a directory), silently: git refuses only for untracked files
that are not ignored. spark-git refuses for both, naming them, before anything moved."""

from __future__ import annotations

import os
from pathlib import Path

from spark_git.core.errors import Blocked
from spark_git.core.git import Git


def in_the_way(worktree: Path, old: str, new: str) -> list[str]:
    """Paths in `worktree` (at `old`) that git does not hold and would overwrite or delete to write what
    `new` adds since it forked from `old` (a rebase of `old` onto `new`, or a fast-forward)."""
    # old...new: what new adds since the two forked (git finds the merge base itself: one process)
    return not_held(worktree, added(Git(worktree), f"{old}...{new}"))


def added(git: Git, *revs: str) -> list[str]:
    """The paths `git diff <revs>` adds (`a...b`: what b adds since the fork point; `a`, `b`: in b's tree, not in a's)."""
    return [f for f in git.run("diff", "--name-only", "-z", "--no-renames", "--diff-filter=A", *revs).stdout.split("\0") if f]


def not_held(worktree: Path, paths: list[str]) -> list[str]:
    """Of the paths a move writes, those `worktree` has in the way that git does not hold there."""
    blockers = sorted({w for f in paths if (w := _blocking(worktree, f))})
    if not blockers:
        return []
    # Of those, what git does not hold (a tracked file in the way is git's own to merge or refuse)
    others = [p.rstrip("/") for p in Git(worktree).run("ls-files", "-z", "--others", "--", *blockers).stdout.split("\0") if p]
    return [b for b in blockers if any(p == b or p.startswith(b + "/") for p in others)]


def _blocking(worktree: Path, rel: str) -> str | None:
    """The path git would delete to write `rel`: `rel` itself, or a file (or symlink) where `rel` needs a
    directory (an ignored `cfg.env` is removed for `cfg.env/inner`)."""
    parts = rel.split("/")
    for i in range(1, len(parts)):
        prefix = worktree.joinpath(*parts[:i])
        if os.path.islink(prefix) or (os.path.lexists(prefix) and not prefix.is_dir()):
            return "/".join(parts[:i])
    return rel if os.path.lexists(worktree / rel) else None


def refuse_overwrite(worktree: Path, old: str, new: str, *, task: str, what: str) -> None:
    """Blocked (nothing changed) when moving `worktree` from `old` to `new` would delete a file git does not hold."""
    refuse_if(worktree, in_the_way(worktree, old, new), task=task, what=what)


def refuse_if(worktree: Path, there: list[str], *, task: str, what: str) -> None:
    """Blocked (nothing changed), naming `there`: files git does not hold in `worktree` that a move would delete."""
    if there:
        raise Blocked(f"{what} would overwrite {len(there)} file(s) git does not hold in {worktree}: {', '.join(there[:10])}",
                      hint=f"move them aside in {worktree} (ignored files are not in git); nothing was changed",
                      details={"files": there}, task=task)
