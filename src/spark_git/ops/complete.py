"""`complete` (task → base): under the main mutex and the main-worktree lock, the approval and the
protocol are checked against the task head, `gates.final` runs fresh on that head, and the base is
advanced by fast-forward only. If the base moved, nothing lands."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from spark_git import protocol
from spark_git.core import faults
from spark_git.core.errors import Blocked, Failed
from spark_git.core.git import Git, Sha, branch_ref
from spark_git.core.layout import Layout, task_name
from spark_git.core.proc import Ticker
from spark_git.gates import command as gates
from spark_git.gates import verdicts
from spark_git.ops import envs, mainlock
from spark_git.ops.advance import record_transition
from spark_git.ops.approvals import approval_holds
from spark_git.ops.merging.prepare import unmet_blocked
from spark_git.ops.merging.verify import (
    GATE_LEFT_CHANGES_HINT,
    gate_failed,
    record_gate,
)
from spark_git.ops.taskfile import updating
from spark_git.state.backends import open_store
from spark_git.state.models import TaskFile
from spark_git.state.store import Store


class CompleteData(BaseModel):
    task: str
    base_branch: str
    old_base: str
    new_base: str
    approved_sha: str
    gate: gates.GateEvidence
    main_worktree_updated: bool


def complete(layout: Layout, task: str, *, session: str | None, rerun: bool = False, ticker: Ticker | None = None) -> CompleteData:
    task = task_name(task)
    if session is None:
        raise Blocked("no session given: complete is run by the task's owner", hint="pass --session or export SPARK_SESSION_ID", task=task)
    store = open_store(layout)
    with mainlock.hold(store, session, f"spark-git complete {task}", task=task):
        return _complete_locked(layout, store, task, session, rerun, ticker)


def _base_worktree(git: Git, base: str) -> Path | None:
    for wt in git.worktrees():
        if wt.branch == base:
            return wt.path
    return None


def _complete_locked(layout: Layout, store: Store, task: str, session: str, rerun: bool = False, ticker: Ticker | None = None) -> CompleteData:
    with updating(layout, task, session) as tf:
        git = layout.git()
        head, base_head = git.branch_head(tf.task_branch), git.branch_head(tf.base_branch)
        if head is None or base_head is None:
            raise Blocked(f"branch {tf.task_branch if head is None else tf.base_branch} does not exist", task=task)
        main_wt = _base_worktree(git, tf.base_branch)
        unmet = _unmet(layout, tf, head, base_head, main_wt)
        if unmet:
            raise unmet_blocked(f"cannot complete {task}", unmet, task)
        ev = _final_gate(layout, tf, head, session, rerun, ticker)
        _land(layout, tf, head, base_head, main_wt, ev)
        faults.point("complete-after-ff")
        store.add_notes([(head, {"kind": "completed", "task": task, "session": session, "base": tf.base_branch, "old_base": base_head})])
        record_transition(layout, tf, "COMPLETE", session, f"landed on {tf.base_branch}", {"commit": head, "old_base": base_head, "gate_log": ev.log_path})
        store.event(task, "completed", session, base=tf.base_branch, old_base=base_head, new_base=head)
        return CompleteData(task=task, base_branch=tf.base_branch, old_base=base_head, new_base=head, approved_sha=head, gate=ev,
                            main_worktree_updated=main_wt is not None)


def _unmet(layout: Layout, tf: TaskFile, head: Sha, base_head: Sha, main_wt: Path | None) -> list[protocol.Unmet]:
    base = tf.base_branch
    unmet = _approval(layout, tf, head)
    if not layout.git().is_ancestor(base_head, head):
        unmet.append(protocol.Unmet(
            f"{base} moved since the task branched ({base} is at {base_head[:12]}, not an ancestor of {head[:12]}): the task is not a fast-forward",
            f"spark-git update {tf.task_name}",
        ))
    unmet += _task_worktree(tf, head)
    if main_wt is not None:
        dirty = Git(main_wt).status()
        if dirty:
            unmet.append(protocol.Unmet(f"{main_wt} has {base} checked out and is not clean: {', '.join(str(d) for d in dirty[:10])}", f"commit, stash or remove them in {main_wt}"))
    return unmet + protocol.complete_conditions(layout, tf, head)


def _approval(layout: Layout, tf: TaskFile, head: Sha) -> list[protocol.Unmet]:
    task, cp = tf.task_name, tf.checkpoint
    if cp is None or cp.type != "changes" or not cp.approved or not cp.commit_sha:
        return [protocol.Unmet(f"the human has not approved the changes of {task} (head {head[:12]})", f"spark-git approve {task} --changes")]
    if not approval_holds(layout.git(), tf.base_branch, cp.commit_sha, cp.patch_id, head):
        return [protocol.Unmet(
            f"the approval is for {cp.commit_sha[:12]}, but the task head is now {head[:12]} with another patch (a change in content voids it)",
            f"spark-git approve {task} --changes",
        )]
    return []


def _task_worktree(tf: TaskFile, head: Sha) -> list[protocol.Unmet]:
    if not Path(tf.worktree).is_dir():
        return [protocol.Unmet(f"the task worktree {tf.worktree} does not exist", f"spark-git doctor {tf.task_name}")]
    twt = Git(tf.worktree)
    dirty = twt.status()
    if dirty:
        return [protocol.Unmet(f"the task worktree {tf.worktree} is not clean: {', '.join(str(d) for d in dirty[:10])}", "commit or remove the changes")]
    if twt.head() != head:
        return [protocol.Unmet(f"the task worktree is not at the task head {head[:12]}")]
    return []


def _final_gate(layout: Layout, tf: TaskFile, head: Sha, session: str, rerun: bool = False, ticker: Ticker | None = None) -> gates.GateEvidence:
    task, cfg = tf.task_name, layout.config.gates
    ev = verdicts.run_or_reuse(open_store(layout), "final", cfg.final, Path(tf.worktree), layout.logs_dir(task), cfg.timeout_s,
                               env=envs.for_worktree(layout, task), rerun=rerun, ticker=ticker)
    record_gate(layout, task, ev, session)
    if not ev.passed:
        raise gate_failed(ev, task, f"{task} was not completed", f"spark-git complete {task}")
    twt = Git(tf.worktree)
    if twt.head() != head or layout.git().branch_head(tf.task_branch) != head:
        raise Failed("the task branch changed while the final gate ran; nothing landed", task=task)
    left = twt.status()
    if left:
        raise Failed(f"the final gate left changes in {tf.worktree}; nothing landed", details={"files": [str(s) for s in left]}, task=task,
                     hint=GATE_LEFT_CHANGES_HINT)
    return ev


def _land(layout: Layout, tf: TaskFile, head: Sha, base_head: Sha, main_wt: Path | None, ev: gates.GateEvidence) -> None:
    """The base moves by fast-forward only, to exactly the approved and gated head."""
    git, base, task = layout.git(), tf.base_branch, tf.task_name
    faults.point("complete-before-ff")
    if git.branch_head(base) != base_head:  # a human committed on the base meanwhile: land nothing
        raise Failed(f"{base} moved while {task} was being completed ({base_head[:12]} → {(git.branch_head(base) or '?')[:12]}); nothing landed", task=task)
    if main_wt is not None:
        Git(main_wt).merge_ff_only(head)  # moves HEAD (the base branch) with its old value checked
    else:
        git.update_ref(branch_ref(base), head, base_head, message=f"spark-git complete {task}")
    landed = git.branch_head(base)
    cp = tf.checkpoint
    # The approval was checked for this head (same commit, or same patch: ops.approvals) under this mutex.
    if landed != head or head != ev.commit or cp is None or not cp.approved:
        raise Failed(f"{base} is at {landed}, expected the approved and gated {head}", task=task)
