"""Which worktrees and branches each agent session owns, for its Claude Code sandbox (clients/claude/sandbox.py):
its own, and those `hook worktree-create` made for it (a subagent with `isolation: worktree` runs in
the parent's session, so under the parent's sandbox). The git entries of every agent's sandbox follow
the common dir, so they are rewritten whenever spark-git adds a worktree or an agent."""

from __future__ import annotations

import json
import os
from pathlib import Path

from spark_git.clients import gitgrants
from spark_git.clients.claude import sandbox
from spark_git.core.errors import BadInput
from spark_git.core.layout import Layout
from spark_git.guard import identity
from spark_git.state.store import Store


class Box:
    def __init__(self, worktree: Path, branch: str, more: sandbox.Owned) -> None:
        self.worktree, self.branch, self.more = worktree, branch, more


def boxes(layout: Layout, store: Store) -> list[Box]:
    """One per existing agent worktree of every task, where the layout puts it."""
    out: list[Box] = []
    for t in store.task_names():
        tf = store.read_task(t)
        agents = sorted(tf.agents) if tf else []
        launched = {a: _launch(layout, t, a) for a in agents}
        for a in agents:
            wt = layout.agent_worktree(t, a)
            mine = os.path.realpath(wt)
            more = tuple((layout.agent_worktree(t, b), str(layout.agent_branch(t, b))) for b in agents
                         if b != a and launched[b] == mine and layout.agent_worktree(t, b).is_dir())
            out += [Box(wt, str(layout.agent_branch(t, a)), more)] if wt.is_dir() else []
    return out


def _launch(layout: Layout, task: str, agent: str) -> str | None:
    """Where the session this worktree was made for (hook worktree-create) was launched; None: no claim."""
    session = identity.claimed_by(layout.repo.common_dir, task, agent)
    if session is None:
        return None
    try:
        data = json.loads(identity.record_path(layout.repo.common_dir, session).read_text())
    except (OSError, ValueError):
        return None
    launch = data.get("launch") if isinstance(data, dict) else None
    return os.path.realpath(launch) if isinstance(launch, str) else None


def box_of(layout: Layout, store: Store, worktree: Path, known: list[Box] | None = None) -> Box | None:
    real = os.path.realpath(worktree)
    return next((b for b in (boxes(layout, store) if known is None else known) if os.path.realpath(b.worktree) == real), None)


def refresh(layout: Layout, store: Store, new: list[Path] | None = None) -> list[Path]:
    """Every agent worktree's sandbox brought up to date (the `new` ones first written); the worktrees
    whose file changed. An agent's settings spark-git cannot read are left alone (the hook still runs)."""
    fresh = {os.path.realpath(p) for p in new or []}
    gitgrants.prepare(layout.repo.common_dir)
    changed = []
    for b in boxes(layout, store):
        try:
            if sandbox.apply(b.worktree, new=os.path.realpath(b.worktree) in fresh, branch=b.branch, more=b.more):
                changed.append(b.worktree)
        except BadInput:
            continue
    return changed


def present(layout: Layout, store: Store, worktree: Path, known: list[Box] | None = None) -> bool:
    """The worktree holds spark-git's sandbox for it as things are now (a stale one: `hooks install`).
    `known`: boxes(layout, store), when the caller asks for many worktrees."""
    b = box_of(layout, store, worktree, known)
    return b is not None and sandbox.present(b.worktree, b.branch, b.more)
