"""`spark-git statusline --json` (and `--help`): the status line's fields as a model. The line itself
is printed by the stdlib fast path (clients/statusline.py) that Claude Code runs after every message."""

from __future__ import annotations

from typing import Any

from spark_git.clients import statusline
from spark_git.core.model import Model


class StatuslineData(Model):
    line: str  # what `spark-git statusline` prints ("" outside a spark-git repo)
    task: str | None = None
    agent: str | None = None  # None: the task worktree (the coordinator's place)
    state: str | None = None
    queue: int | None = None  # place in the landing queue, 1 = next
    dirty: bool | None = None  # the worktree has uncommitted or untracked changes
    ahead: int | None = None  # commits beyond the task branch (an agent) or the base branch (the task)
    behind: int | None = None  # commits of that branch not in this worktree's
    live_tasks: int | None = None  # outside any task: how many are live


def collect(event: dict[str, Any], where: str | None = None) -> StatuslineData:
    return StatuslineData.model_validate(statusline.compute(event, where))
