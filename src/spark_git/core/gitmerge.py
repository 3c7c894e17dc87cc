"""A three-way merge without a worktree (the merge queue's candidate), through `Git.run`."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from spark_git.core.errors import GitError
from spark_git.core.git import Git


def merge_tree(git: Git, ours: str, theirs: str) -> tuple[str | None, list[str]]:
    """`git merge-tree --write-tree` (git >= 2.38): (tree, []) or (None, the conflicting files)."""
    r = git.run("merge-tree", "--write-tree", "--name-only", "--no-messages", "-z", ours, theirs, check=False)
    if r.returncode > 1:
        raise GitError(["git", "merge-tree", "--write-tree", ours, theirs], r.returncode, r.stderr, str(git.cwd))
    tree, *files = [f for f in r.stdout.split("\0") if f]
    return (tree, []) if r.returncode == 0 else (None, sorted(set(files)))


def missing_patches(git: Git, upstream: str, head: str, limit: str) -> list[str]:
    """`git cherry upstream head limit`: the commits of limit..head with no equivalent patch (by patch
    id) in `upstream`. Empty: everything head adds is in upstream, perhaps rebased."""
    r = git.run("cherry", upstream, head, limit)
    return [line[2:] for line in r.lines if line.startswith("+ ")]


USAGE = 129  # git's exit code for a usage error: a git older than 2.38 has no `merge-tree --write-tree`


@contextmanager
def scratch_objects(objects: Path) -> Iterator[dict[str, str]]:
    """An environment in which git writes new objects to a temporary directory (deleted on exit) and
    reads the repository's `objects` as an alternate: a trial merge leaves nothing behind, not even
    dangling trees for `git fsck` to report. In memory (/dev/shm) where there is one: writing a few
    dozen loose objects to a disk under load cost the radar 50-90 ms, in memory 2-5 ms."""
    shm = "/dev/shm"
    parent = shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else None
    with tempfile.TemporaryDirectory(prefix="spark-merge-tree-", dir=parent) as tmp:
        yield {"GIT_OBJECT_DIRECTORY": tmp, "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(objects)}


def conflicts(git: Git, ours: str, theirs: str, env: dict[str, str] | None = None) -> list[str] | None:
    """The files a merge of the two commits would conflict on ([] when it would merge cleanly);
    None when this git cannot tell without a worktree (older than 2.38). Never touches a ref, an
    index or a worktree (objects too, under `scratch_objects`)."""
    r = git.run("merge-tree", "--write-tree", "--name-only", "--no-messages", "-z", ours, theirs, check=False, env=env)
    if r.returncode == USAGE:
        return None
    if r.returncode > 1:
        raise GitError(["git", "merge-tree", "--write-tree", ours, theirs], r.returncode, r.stderr, str(git.cwd))
    _tree, *files = [f for f in r.stdout.split("\0") if f]
    return [] if r.returncode == 0 else sorted(set(files))


def conflicts_many(git: Git, pairs: list[tuple[str, str]], objects: Path) -> list[list[str]] | None:
    """`conflicts` of every pair, from one `git merge-tree --stdin` (one process for them all; a git
    without --stdin gets one process per pair), writing only to scratch objects (`objects`: the
    repository's object directory). None when this git cannot tell (older than 2.38)."""
    if not pairs:
        return []
    lines = "".join(f"{a} {b}\n" for a, b in pairs)
    with scratch_objects(objects) as env:
        r = git.run("merge-tree", "--stdin", "--name-only", "--no-messages", "-z", input=lines, check=False, env=env)
        if r.returncode == USAGE:
            found = [conflicts(git, a, b, env) for a, b in pairs]
            return None if any(f is None for f in found) else [f or [] for f in found]
    if r.returncode != 0:
        raise GitError(["git", "merge-tree", "--stdin"], r.returncode, r.stderr, str(git.cwd))
    # Per merge: "<1 if clean else 0>\0<tree>\0<file>\0…\0" and one more \0 (file names are never empty).
    blocks = r.stdout.split("\0\0")[: len(pairs)]
    if len(blocks) < len(pairs) or any(b.count("\0") < 1 for b in blocks):
        raise GitError(["git", "merge-tree", "--stdin"], r.returncode, f"unexpected output for {len(pairs)} merges: {r.stdout[:200]!r}", str(git.cwd))
    out: list[list[str]] = []
    for block in blocks:
        clean, _tree, *files = block.split("\0")
        out.append([] if clean == "1" else sorted(set(files)))
    return out
