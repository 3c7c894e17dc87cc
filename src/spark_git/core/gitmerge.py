"""A three-way merge without a worktree (the merge queue's candidate), through `Git.run`."""

from __future__ import annotations

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
