"""The `Gate` interface: one check a change must pass before it lands. A gate kind is one module
with one class behind this interface plus one line in `registry.GATES`.

A gate is built with its configuration (what to run, which commits to look at); `check` then
either returns the evidence of what it ran (command gates), returns None (checks that only read),
or raises `Blocked` saying what to fix."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Protocol

from spark_git.core.git import Git, StatusEntry
from spark_git.gates.evidence import GateEvidence


@dataclass(frozen=True)
class MergeSubject:
    """What an agent merge puts before its gates, read once by the merge."""

    task: str
    agent: str
    branch: str  # the agent's branch
    agent_wt: Git
    agent_dirty: list[StatusEntry]
    task_wt: Git
    task_dirty: list[StatusEntry]
    messages: dict[str, str]  # the commits to land: sha → message, oldest first
    attribution_mode: str


class Gate(Protocol):
    name: ClassVar[str]  # the registry key

    @classmethod
    def for_merge(cls, subject: MergeSubject) -> list[tuple[Gate, Git]]:
        """The checks of this kind a merge runs before it changes anything, each with the worktree
        it looks at (empty: this kind runs elsewhere, e.g. the command gate after the rewrite)."""
        ...

    def check(self, git: Git, task: str | None) -> GateEvidence | None:
        """`git`: the worktree under test; `task`: named in refusals."""
