"""`sync`: the agent catches up with the task branch (ops/shared/merging/sync.py: `agent run` syncs a
reviewer or validator before its run too)."""

from __future__ import annotations

from spark_git.core.layout import Layout
from spark_git.ops.shared.merging.sync import SyncData, sync_with
from spark_git.state.backends import open_store

__all__ = ["SyncData", "sync"]


def sync(layout: Layout, task: str, agent: str, *, session: str | None) -> SyncData:
    return sync_with(layout, open_store(layout), task, agent, session=session)
