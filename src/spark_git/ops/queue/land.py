"""Landing a gated candidate: one compare-and-swap of the base (or `merge --ff-only` in the main
worktree when it has the base checked out), then each task's record: COMPLETE with its evidence,
notes, the outcome a waiting `complete` reads, and its queue ref deleted by compare-and-swap.
Every step after the base moved is idempotent, so `recover` can finish a landing a kill cut short."""

from __future__ import annotations

import os
from typing import Any, Literal

from spark_git.core import faults, gitattest
from spark_git.core.errors import GitError
from spark_git.core.git import Git, Sha, branch_ref
from spark_git.core.layout import Layout
from spark_git.gates import command as gates
from spark_git.gates import evidence
from spark_git.ops.queue import attestland
from spark_git.ops.queue.checks import approval_unmet, base_worktree
from spark_git.ops.shared import mainlock
from spark_git.ops.shared.taskfile import updating
from spark_git.ops.shared.transitions import record_transition
from spark_git.state.locks import task_mutex_name
from spark_git.state.queuelog import OUTCOMES_KEPT, QueueCandidate, QueueOutcome
from spark_git.state.queuerefs import QueueEntry
from spark_git.state.store import Store

LANDING_REASON = "spark-git queue: landing"


class BaseMoved(Exception):
    """The base is not where the candidate was built: nothing landed."""


def problem(layout: Layout, store: Store, e: QueueEntry) -> str | None:
    """Why a queue entry may not land (None: it may): checked when a batch is taken and again just
    before the base moves. The approval goes through the one check, `approval_unmet`."""
    tf = store.read_task(e.task)
    if tf is not None and (tf.queued is None or tf.queued.ref != e.ref):
        with store.mutex(task_mutex_name(e.task)):  # an enqueue writes the marker just after the ref, under it
            tf = store.read_task(e.task)
    if tf is None:
        return "the task no longer exists"
    if tf.queued is None or tf.queued.ref != e.ref:
        return "the task is not marked as queued by this entry (run `complete` again)"
    if layout.git().branch_head(tf.task_branch) != e.sha:
        return f"the task branch moved since it was queued at {e.sha[:12]}"
    unmet = approval_unmet(layout, tf, Sha(e.sha))
    return "; ".join(str(u) for u in unmet) if unmet else None


def land(layout: Layout, store: Store, cand: QueueCandidate, ev: gates.GateEvidence, session: str) -> None:
    """Moves the base from cand.old_base to the candidate's tip, or raises BaseMoved (nothing landed)."""
    git, base, tip = layout.git(), cand.base_branch, cand.parts[-1].tip
    with mainlock.hold(store, session, LANDING_REASON):
        log = store.read_queue_log()
        cand.landing, cand.gate = tip, ev.model_dump(mode="json")
        log.candidate = cand
        store.write_queue_log(log)  # before the base moves: recover() finishes what a kill cuts short
        faults.point("complete-before-ff")
        if git.branch_head(base) != cand.old_base:
            raise BaseMoved(f"{base} moved while the batch was gated")
        attestland.record(layout, store, cand)  # before the base moves: a remote gets it in the same push
        if not store.publish_base(base, tip, cand.old_base, [QueueEntry(p.ref, "", p.task, p.head) for p in cand.parts], (gitattest.ATTEST_REF,)):
            raise BaseMoved(f"{base} moved on the shared remote while the batch was gated")
        main_wt = base_worktree(git, base, store)
        try:
            if main_wt is not None:
                Git(main_wt).merge_ff_only(tip)  # moves the base with its old value checked
            else:
                git.update_ref(branch_ref(base), tip, cand.old_base, message=f"spark-git queue: land {', '.join(p.task for p in cand.parts)}")
        except GitError as e:
            if git.branch_head(base) != cand.old_base:
                raise BaseMoved(f"{base} moved while the batch was landing: {e}") from e
            raise
        faults.point("complete-after-ff")
        finish(layout, store, cand, main_wt is not None)


def finish(layout: Layout, store: Store, cand: QueueCandidate, main_updated: bool) -> None:
    """Records every part of a landed candidate (skipping what is recorded already)."""
    base, batch, gate = cand.base_branch, [p.task for p in cand.parts], cand.gate
    for p in cand.parts:
        o = QueueOutcome(task=p.task, ref=p.ref, head=p.head, result="landed", reason=f"landed on {base}", landed_commit=p.tip,
                         old_base=cand.old_base, new_base=cand.landing, batch=batch, gate=gate, main_worktree_updated=main_updated,
                         gate_log=(gate or {}).get("log_path"), drained_by=os.getpid())
        _complete_task(layout, store, o, gate)
        record_outcome(store, o)
        faults.point("queue-part-recorded")  # some tasks of the batch recorded, the others not yet
        store.dequeue(QueueEntry(p.ref, "", p.task, p.head))
    log = store.read_queue_log()
    log.candidate = None
    store.write_queue_log(log)


def nothing_to_land(layout: Layout, store: Store, e: QueueEntry, base: str, tip: str) -> None:
    """A task with no commit of its own (its head is the commit it started from, in the base): COMPLETE
    with nothing landed, so its protocol ends as before the landing became a merge commit."""
    o = QueueOutcome(task=e.task, ref=e.ref, head=e.sha, result="landed", reason=f"no commit of its own: nothing added to {base}",
                     landed_commit=e.sha, old_base=tip, new_base=tip, batch=[e.task], drained_by=os.getpid())
    _complete_task(layout, store, o, None)
    record_outcome(store, o)
    store.dequeue(QueueEntry(e.ref, "", e.task, e.sha))


def _complete_task(layout: Layout, store: Store, o: QueueOutcome, gate: dict[str, Any] | None) -> None:
    if store.read_task(o.task) is None:
        return
    with updating(store, o.task, None, owner=False) as tf:
        if tf.queued is None or tf.queued.ref != o.ref:
            return  # recorded already (a re-run after a kill)
        session = tf.queued.session_id
        if gate is not None:
            evidence.record(store, o.task, gates.GateEvidence.model_validate(gate), session, note=gate.get("commit") in (o.landed_commit, o.head), batch=o.batch)
        store.add_notes([(o.head, {"kind": "completed", "task": o.task, "session": session, "base": tf.base_branch, "old_base": o.old_base,
                                   "landed_as": o.landed_commit, "batch": o.batch})])
        record_transition(store, tf, "COMPLETE", session, f"landed on {tf.base_branch}",
                          {"commit": o.head, "landed_commit": o.landed_commit, "old_base": o.old_base, "new_base": o.new_base,
                           "batch": o.batch, "gate_log": o.gate_log})
        tf.queued = None
        store.event(o.task, "completed", session, base=tf.base_branch, old_base=o.old_base, new_base=o.new_base, landed_commit=o.landed_commit)


def evict(layout: Layout, store: Store, entry: QueueEntry, result: Literal["failed", "blocked"], reason: str, *, files: list[str] | None = None,
          gate_log: str | None = None, batch: list[str] | None = None, back_to_implementation: bool = False,
          failed_tests: list[str] | None = None, next: list[str] | None = None) -> QueueOutcome:
    """Takes the entry out of the queue with a failed/blocked outcome; the task keeps its state unless a
    bisection found it to be the culprit (then it goes back to IMPLEMENTATION with the gate log)."""
    o = QueueOutcome(task=entry.task, ref=entry.ref, head=entry.sha, result=result, reason=reason,
                     files=files or [], gate_log=gate_log, batch=batch or [], drained_by=os.getpid(), sent_back=back_to_implementation,
                     failed_tests=failed_tests or [], next=next or [])
    if store.read_task(entry.task) is not None:
        with updating(store, entry.task, None, owner=False) as tf:
            session = tf.queued.session_id if tf.queued else None
            if back_to_implementation and tf.state != "IMPLEMENTATION":
                # The table has no COMPLETE-pending → IMPLEMENTATION row for every state yet: the queue's
                # verdict is recorded directly, with the log as evidence.
                record_transition(store, tf, "IMPLEMENTATION", session, f"spark-git queue: {reason}",
                                  {"task_head": entry.sha, "gate_log": gate_log, "failed_tests": o.failed_tests, "batch": o.batch,
                                   "evicted_by": "final gate (bisected)"})
            if tf.queued is not None and tf.queued.ref == entry.ref:
                tf.queued = None
            store.event(entry.task, "dequeued", session, ref=entry.ref, result=result, reason=reason, files=o.files, gate_log=gate_log)
    record_outcome(store, o)
    store.dequeue(entry)
    return o


def record_outcome(store: Store, o: QueueOutcome) -> None:
    log = store.read_queue_log()
    if log.outcome_for(o.ref) is None:
        log.outcomes = [*log.outcomes, o][-OUTCOMES_KEPT:]
        log.counts.landed += o.result == "landed"
        store.write_queue_log(log)
