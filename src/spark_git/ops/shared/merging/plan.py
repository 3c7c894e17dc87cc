"""What an agent merge knows as it goes: read by `prepare`, rewritten by `rebase`/`stamp`, landed
and recorded by the last steps."""

from __future__ import annotations

from dataclasses import dataclass, field

from spark_git.core.git import Git, Sha
from spark_git.core.layout import Layout
from spark_git.state.models import AgentEntry, TaskFile
from spark_git.state.store import Store


@dataclass
class Plan:
    layout: Layout
    store: Store
    tf: TaskFile
    agent: str
    entry: AgentEntry
    session: str | None
    awt: Git  # the agent's worktree
    twt: Git  # the task worktree
    task_head: Sha
    a_head: Sha
    messages: dict[str, str]  # the agent's new commits, oldest first → full message
    recovered: list[str] = field(default_factory=list)
    original: dict[str, str | None] = field(default_factory=dict)  # current sha → sha before a rewrite
    archive_ref: str | None = None
    archive_is_new: bool = False  # archive_ref was created by this merge (a refusal removes it again)
    rebased: bool = False
    stamped: int = 0

    @property
    def task(self) -> str:
        return self.tf.task_name

    @property
    def new(self) -> list[str]:
        return list(self.messages)

    @property
    def git(self) -> Git:
        return self.layout.git()
