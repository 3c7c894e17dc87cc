"""The clean-tree gate: nothing modified, staged or untracked (ignored files do not count)."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import ClassVar

from spark_git.core.errors import Blocked
from spark_git.core.git import Git, StatusEntry
from spark_git.gates.base import Gate, MergeSubject


def check_clean(git: Git, what: str, task: str | None = None, dirty: list[StatusEntry] | None = None) -> None:
    """Blocked, listing the files, unless the worktree has no modified, staged or untracked files.
    `dirty`: the worktree's status when the caller already has it."""
    dirty = git.status() if dirty is None else dirty
    if dirty:
        raise Blocked(
            f"{what} is not clean: {len(dirty)} modified, staged or untracked file(s)",
            hint="commit or remove them first (untracked files count; ignored ones do not)",
            details={"worktree": str(git.cwd), "files": [str(d) for d in dirty]},
            next=[shlex.join(["git", "-C", str(git.cwd), "status", "--short"])],
            task=task,
        )


@dataclass(frozen=True)
class CleanGate:
    name: ClassVar[str] = "clean"
    what: str  # how the refusal names the worktree: "agent a1's worktree"
    dirty: list[StatusEntry] | None = None  # its status, when the caller already has it

    @classmethod
    def for_merge(cls, subject: MergeSubject) -> list[tuple[Gate, Git]]:
        return [(cls(f"agent {subject.agent}'s worktree", subject.agent_dirty), subject.agent_wt),
                (cls("the task worktree", subject.task_dirty), subject.task_wt)]

    def check(self, git: Git, task: str | None) -> None:
        check_clean(git, self.what, task, self.dirty)
