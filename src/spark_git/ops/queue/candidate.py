"""The candidate of a batch: each task lands as one merge commit onto the candidate so far (first parent:
the base or the task ahead of it; second parent: the approved task head), written without a worktree
(`git merge-tree --write-tree` + `commit-tree`). So main's first-parent history holds one gated tree
per landed task, the approved commits themselves are contained in main, and a task's own intermediate
commits stay off the first-parent line `git bisect --first-parent` walks. A task whose merge conflicts,
or whose patch would change on the moved base, is left out with the reason."""

from __future__ import annotations

from dataclasses import dataclass, field

from spark_git.core.git import Git
from spark_git.core.gitmerge import merge_tree
from spark_git.ops.queue.unchanged import patch_unchanged
from spark_git.state.queuelog import CandidatePart
from spark_git.state.queuerefs import QueueEntry


@dataclass
class Built:
    base: str
    parts: list[CandidatePart] = field(default_factory=list)
    conflicts: list[tuple[QueueEntry, list[str]]] = field(default_factory=list)
    changed: list[QueueEntry] = field(default_factory=list)  # the merge applies, but not as the approved patch
    inside: list[QueueEntry] = field(default_factory=list)  # the head is in the base already: nothing to land

    @property
    def tip(self) -> str:
        return self.parts[-1].tip if self.parts else self.base


def build(git: Git, base: str, entries: list[QueueEntry]) -> Built:
    out = Built(base)
    for e in entries:
        forked = e.sha != out.tip and not git.is_ancestor(out.tip, e.sha)  # the base moved since the task branched
        if e.sha == out.tip or (forked and git.is_ancestor(e.sha, out.tip)):
            out.inside.append(e)  # an empty merge commit would land and be called the task's landing
            continue
        tree, files = merge_tree(git, out.tip, e.sha)
        if tree is None:
            out.conflicts.append((e, files))
            continue
        merge = git.commit_tree(tree, [out.tip, e.sha], message(e.task, e.sha), {})
        if forked and not patch_unchanged(git, out.tip, e.sha, merge):
            out.changed.append(e)
            continue
        out.parts.append(CandidatePart(task=e.task, ref=e.ref, head=e.sha, tip=merge))
    return out


def message(task: str, head: str) -> str:
    return f"spark-git: land task {task}\n\nThe approved head {head} as one commit on the base.\n\nSpark-Task: {task}\n"
