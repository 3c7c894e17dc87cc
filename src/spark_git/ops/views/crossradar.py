"""Cross-task radar: which live tasks' changes would conflict when both land, and on which files,
before either lands. Each task's work is its head and its agents' unmerged heads; every such pair of
two tasks goes into the same one `git merge-tree --stdin` the per-task radar uses (core/gitmerge.py;
scratch objects, nothing written to the repository)."""

from __future__ import annotations

from pathlib import Path

from spark_git.core import gitmerge
from spark_git.core.git import Git
from spark_git.core.model import Model


class TaskClash(Model):
    task: str
    other: str
    files: list[str]  # where landing both would conflict


def between(git: Git, objects: Path, work: list[tuple[str, list[str]]]) -> list[TaskClash]:
    """`work`: each task with its tips (its head when it holds commits beyond its base, and each agent
    head with unmerged work); tasks without any are left out by the caller."""
    pairs = [(a, b, ta, tb) for i, (a, tips_a) in enumerate(work) for b, tips_b in work[i + 1:] for ta in tips_a for tb in tips_b]
    found = gitmerge.conflicts_many(git, [(ta, tb) for _, _, ta, tb in pairs], objects)
    if not found:
        return []
    files: dict[tuple[str, str], set[str]] = {}
    for (a, b, _, _), f in zip(pairs, found, strict=True):
        if f:
            files.setdefault((a, b), set()).update(f)
    return [TaskClash(task=a, other=b, files=sorted(fs)) for (a, b), fs in files.items()]
