"""What a task must satisfy to enter the merge queue and, again, to land: one approval check
(`approval_unmet`, the seam for approvals bound to the patch), the protocol, clean worktrees."""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path

from spark_git import protocol
from spark_git.core.git import Git, Sha, branch_ref
from spark_git.core.layout import Layout
from spark_git.ops.shared import ignored, signed
from spark_git.protocol import approval_holds
from spark_git.state.locks import WORKTREES
from spark_git.state.models import TaskFile
from spark_git.state.store import Store


def base_worktree(git: Git, base: str, store: Store | None = None) -> Path | None:
    """`store`: list under the WORKTREES mutex. A drain's runner threads add and remove scratch
    worktrees under it, and `git worktree list` racing one of those failed once (exit 128)."""
    with store.mutex(WORKTREES) if store is not None else nullcontext():
        found = git.worktrees()
    return next((wt.path for wt in found if wt.branch == base), None)


def enqueue_unmet(layout: Layout, store: Store, tf: TaskFile, head: Sha, base_head: Sha, main_wt: Path | None) -> list[protocol.Unmet]:
    """Everything `complete` checks before it enqueues a task (a refusal changes nothing)."""
    base = tf.base_branch
    # A base that moved since the task branched is no refusal: the queue lands the task as a merge
    # onto the new base when its patch applies unchanged, and gives it back (`update`) when not.
    unmet = approval_unmet(layout, tf, head) + _task_worktree(tf, head)
    if main_wt is not None:
        # Changes to tracked files block; an untracked file only where the task adds one (in_the_way):
        # `hooks install` leaves .claude/ untracked, and an unrelated file survives a fast-forward.
        dirty = [e for e in Git(main_wt).status() if e.code != "??"]
        if dirty:
            unmet.append(protocol.Unmet(f"{main_wt} has {base} checked out and is not clean: {', '.join(str(d) for d in dirty[:10])}", how=f"commit, stash or remove them in {main_wt}"))
        unmet += in_the_way(main_wt, base_head, head)
    return unmet + protocol.complete_conditions(store, tf, head)


def in_the_way(main_wt: Path, base_head: Sha, head: Sha) -> list[protocol.Unmet]:
    """Files git does not hold (untracked or ignored) in the main worktree where the task adds a path,
    or a directory of one: the fast-forward would refuse (untracked) or silently overwrite (ignored)."""
    there = ignored.in_the_way(main_wt, base_head, head)
    if not there:
        return []
    return [protocol.Unmet(f"the task adds files where {len(there)} path(s) not in git exist in {main_wt} and would be overwritten: {', '.join(there[:10])}",
                           how=f"move them aside in {main_wt} (they are not in git)")]


def approval_unmet(layout: Layout, tf: TaskFile, head: Sha) -> list[protocol.Unmet]:
    """The one approval check of landing, at enqueue and again just before the base moves (the seam
    for approvals bound to the patch as well as the head)."""
    task, cp = tf.task_name, tf.checkpoint
    if cp is None or cp.type != "changes" or not cp.approved or not cp.commit_sha:
        return [protocol.Unmet(f"the human has not approved the changes of {task} (head {head[:12]})", f"spark-git approve {task} --changes")]
    if not approval_holds(layout.git(), branch_ref(tf.base_branch), cp.commit_sha, cp.patch_id, head):
        return [protocol.Unmet(
            f"the approval is for {cp.commit_sha[:12]}, but the task head is now {head[:12]} with another patch (a change in content voids it)",
            f"spark-git approve {task} --changes",
        )]
    wrong = signed.problem(layout, tf, cp, head)
    return [protocol.Unmet(f"the approval of {task} does not count: {wrong}", f"spark-git approve {task} --changes")] if wrong else []


def _task_worktree(tf: TaskFile, head: Sha) -> list[protocol.Unmet]:
    if not Path(tf.worktree).is_dir():
        return [protocol.Unmet(f"the task worktree {tf.worktree} does not exist", f"spark-git doctor {tf.task_name}")]
    twt = Git(tf.worktree)
    dirty = twt.status()
    if dirty:
        return [protocol.Unmet(f"the task worktree {tf.worktree} is not clean: {', '.join(str(d) for d in dirty[:10])}", how=f"commit or remove the changes in {tf.worktree}")]
    if twt.head() != head:
        return [protocol.Unmet(f"the task worktree is not at the task head {head[:12]}")]
    return []


def forge_unmet(layout: Layout, store: Store, tf: TaskFile, head: Sha) -> list[protocol.Unmet]:
    """What `complete --via gh|glab` checks before it pushes anything: the approval bound to the head,
    a clean task worktree at the head, the protocol. The base need not be an ancestor: the forge merges."""
    return approval_unmet(layout, tf, head) + _task_worktree(tf, head) + protocol.complete_conditions(store, tf, head)
