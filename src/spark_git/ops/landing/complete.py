"""`complete` (task → base): the task is checked (approval, protocol, clean worktrees, a fast-forward of
the base) and enqueued in the merge queue (ops/queue); unless another process drains the queue, this
one does, and the command reports the task's own outcome. A batch of one is today's `complete`: the
final gate runs on the task head and the base is fast-forwarded to exactly that commit."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from spark_git.core.errors import Blocked, Failed
from spark_git.core.layout import Layout, task_name
from spark_git.core.model import Model
from spark_git.core.proc import Ticker
from spark_git.gates import command as gates
from spark_git.ops.queue import drain, enqueue, gate
from spark_git.state.backends import open_store
from spark_git.state.models import TaskFile
from spark_git.state.queuelog import QueueOutcome
from spark_git.state.queuerefs import Priority


class CompleteData(Model):
    task: str
    result: Literal["landed", "queued"] = "landed"
    base_branch: str
    old_base: str | None = None
    new_base: str | None = None
    approved_sha: str
    landed_commit: str | None = None  # the merge commit the task landed as on the base (second parent: approved_sha)
    batch: list[str] = []  # the tasks gated and landed together
    queue_ref: str | None = None
    gate: gates.GateEvidence | None = None
    main_worktree_updated: bool = False
    already_landed: bool = False  # a re-run: the task had landed before this call; nothing was done


def complete(layout: Layout, task: str, *, session: str | None, wait: bool = True, notify: Callable[[str], None] | None = None,
             rerun: bool = False, ticker: Ticker | None = None, priority: Priority = "normal") -> CompleteData:
    task = task_name(task)
    if session is None:
        raise Blocked("no session given: complete is run by the task's owner", hint="pass --session or export SPARK_SESSION_ID", task=task)
    store = open_store(layout)
    try:
        entry, tf = enqueue.enqueue(layout, store, task, session, priority)
    except enqueue.Landed as done:
        return landed_before(done.tf)
    if not wait:
        return CompleteData(task=task, result="queued", base_branch=tf.base_branch, approved_sha=entry.sha, queue_ref=entry.ref)
    return result_of(drain.wait_for(layout, store, entry, session, notify, gate.GateOpts(rerun=rerun, ticker=ticker)), tf.base_branch)


def result_of(o: QueueOutcome, base: str) -> CompleteData:
    """The task's own outcome: landed (exit 0), evicted by the final gate (1) or blocked (3)."""
    if o.result == "failed":
        # A culprit went back to IMPLEMENTATION: `complete` is not what it needs next.
        nxt = f"spark-git status {o.task}" if o.sent_back else f"spark-git complete {o.task}"
        raise Failed(f"{o.task} was not completed: {o.reason}; log: {o.gate_log}", task=o.task, next=[nxt],
                     hint=f"read the log, fix the code, commit, and try again: {nxt}",
                     details={"log_path": o.gate_log, "log_tail": gates.log_tail(o.gate_log), "batch": o.batch, "queue_ref": o.ref,
                              "sent_back_to_implementation": o.sent_back, "retry": nxt})
    if o.result == "blocked":
        raise Blocked(f"{o.task} was not completed: {o.reason}", task=o.task, details={"files": o.files, "queue_ref": o.ref},
                      next=o.next or None)
    return CompleteData(task=o.task, base_branch=base, old_base=o.old_base, new_base=o.new_base, approved_sha=o.head,
                        landed_commit=o.landed_commit, batch=o.batch, queue_ref=o.ref,
                        gate=gates.GateEvidence.model_validate(o.gate) if o.gate else None,
                        main_worktree_updated=o.main_worktree_updated)


def landed_before(tf: TaskFile) -> CompleteData:
    """`complete` of a task that has landed: what its COMPLETE transition recorded (exit 0, nothing done)."""
    ev = next((t.evidence for t in reversed(tf.transition_log) if t.to == "COMPLETE"), {})
    return CompleteData(task=tf.task_name, base_branch=tf.base_branch, old_base=ev.get("old_base"), new_base=ev.get("new_base"),
                        approved_sha=str(ev.get("commit") or ""), landed_commit=ev.get("landed_commit"), batch=ev.get("batch") or [],
                        already_landed=True)
