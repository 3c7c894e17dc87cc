"""The agent catches up with the task branch (`sync`, and `agent run` before a reviewer's or validator's
run); a conflict is left in the agent's worktree for the agent to resolve (unlike `merge`, which
restores everything)."""

from __future__ import annotations

import shlex

from spark_git.core.errors import Blocked
from spark_git.core.layout import Layout, agent_name, task_name
from spark_git.core.model import Model
from spark_git.gates import command as gates
from spark_git.ops.shared.ignored import refuse_overwrite
from spark_git.ops.shared.merging.prepare import agent_entry, existing_worktree
from spark_git.ops.shared.merging.rewrite import rebase_onto, recover
from spark_git.ops.shared.taskfile import updating
from spark_git.state.store import Store


class SyncData(Model):
    task: str
    agent: str
    task_head: str
    agent_head: str
    rebased: bool
    conflicts: list[str]
    archive_ref: str | None


def sync_with(layout: Layout, store: Store, task: str, agent: str, *, session: str | None) -> SyncData:
    task = task_name(task)
    agent = agent_name(agent)
    with updating(store, task, session, agent=agent) as tf:
        entry = agent_entry(tf, agent)
        git = layout.git()
        awt = existing_worktree(entry.worktree, f"agent {agent}'s worktree", task)
        recover(layout, task, agent, awt)
        if awt.rebase_in_progress():
            raise Blocked(
                f"a rebase is already in progress in {awt.cwd}",
                hint="resolve the conflicts, `git add` them and `GIT_EDITOR=true git rebase --continue`",
                details={"conflicts": awt.conflicted_files()}, next=[f"cd {shlex.quote(str(awt.cwd))} && git status"], task=task,
            )
        gates.check_clean(awt, f"agent {agent}'s worktree", task)
        task_head = git.branch_head(tf.task_branch)
        a_head = git.branch_head(entry.branch)
        if task_head is None or a_head is None:
            raise Blocked(f"branch {tf.task_branch if task_head is None else entry.branch} does not exist", task=task)
        if git.is_ancestor(task_head, a_head):
            return SyncData(task=task, agent=agent, task_head=task_head, agent_head=a_head, rebased=False, conflicts=[], archive_ref=None)
        refuse_overwrite(awt.cwd, a_head, task_head, task=task, what=f"rebasing {agent} onto {tf.task_branch}")
        ref = store.archive(task, entry.branch, a_head, f"branch {entry.branch} before syncing it", session, event=False)
        conflicts = rebase_onto(layout, task, agent, awt, task_head, leave_conflicts=True)
        store.event(task, "synced", session, agent=agent, task_head=task_head, old_agent_head=a_head, conflicts=conflicts)
        return SyncData(task=task, agent=agent, task_head=task_head, agent_head=awt.head() or a_head, rebased=True, conflicts=conflicts, archive_ref=ref)
