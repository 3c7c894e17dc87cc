"""Enqueue: check everything a landing needs (a refusal changes nothing), then create the queue ref by
compare-and-swap and mark the task `queued` (it keeps its protocol state)."""

from __future__ import annotations

from spark_git.core.errors import Blocked
from spark_git.core.layout import Layout
from spark_git.ops.queue.checks import base_worktree, enqueue_unmet
from spark_git.ops.shared.merging.prepare import unmet_blocked
from spark_git.ops.shared.taskfile import updating
from spark_git.state.locks import MAIN, require_owner
from spark_git.state.models import QueueMark, TaskFile
from spark_git.state.queuerefs import Priority, QueueEntry
from spark_git.state.store import Store


class Landed(Exception):
    """The task has landed already (COMPLETE): a re-run of `complete` has nothing to do."""

    def __init__(self, tf: TaskFile) -> None:
        super().__init__(tf.task_name)
        self.tf = tf


def enqueue(layout: Layout, store: Store, task: str, session: str, priority: Priority = "normal") -> tuple[QueueEntry, TaskFile]:
    """The task's queue entry (its existing one when it is queued already: a re-run after a crash waits
    for the outcome instead of queueing twice). `high`: ahead of every normal entry (a hotfix).
    Raises Landed for a task that has landed."""
    _main_lock_free(store, session, task)  # before the task mutex: the lock order is main → task
    with updating(store, task, session) as tf:
        queued = _queued_entry(store, tf)
        if queued is not None:
            return queued, tf
        if tf.state == "COMPLETE":
            raise Landed(tf.model_copy(deep=True))
        git = layout.git()
        head, base_head = git.branch_head(tf.task_branch), git.branch_head(tf.base_branch)
        if head is None or base_head is None:
            raise Blocked(f"branch {tf.task_branch if head is None else tf.base_branch} does not exist", task=task)
        unmet = enqueue_unmet(layout, store, tf, head, base_head, base_worktree(git, tf.base_branch))
        if unmet:
            raise unmet_blocked(f"cannot complete {task}", unmet, task)
        entry = store.enqueue(task, head, priority)
        tf.queued = QueueMark(ref=entry.ref, head=head, session_id=session)
        store.event(task, "queued", session, ref=entry.ref, head=head, base=tf.base_branch, priority=priority)
        return entry, tf


def _queued_entry(store: Store, tf: TaskFile) -> QueueEntry | None:
    if tf.queued is None:
        return None
    for e in store.queue_entries():
        if e.ref == tf.queued.ref:
            return e
    return None  # a stale marker (its outcome is recorded): queue again


def _main_lock_free(store: Store, session: str, task: str) -> None:
    """Another session operating on the main worktree (`lock main`) blocks landing; checked under the
    main mutex, so a draining process's own short-lived lock is never seen here."""
    with store.mutex(MAIN):
        held = store.read_main_lock()
        if held is not None and held.session_id != session:
            require_owner("the main worktree", held.session_id, held.last_active_at, session, task=task, main=True)
