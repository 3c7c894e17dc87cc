"""What `queue` and `status` show of a task landing through the forge: a model of its own, so that
`status` loads the forge code only when a task has a PR/MR."""

from __future__ import annotations

from typing import Literal

from spark_git.core.model import Model


class ForgeView(Model):
    """A task's PR/MR as `queue` and `status` show it (`error`: the forge could not be asked)."""

    task: str
    via: str
    url: str
    number: str
    head: str
    state: Literal["open", "merged", "closed"]
    merged_at: str | None = None
    merge_commit: str | None = None
    error: str | None = None
