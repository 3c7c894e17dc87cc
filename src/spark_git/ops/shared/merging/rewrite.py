"""Merge step 2: bring the agent's commits onto the task head (rebase) and stamp attribution.

Before a branch is rewritten its old head is archived (`Store.archive`), so no commit is ever
unreachable, even if the process is killed half-way."""

from __future__ import annotations

import os
from pathlib import Path

from spark_git.core import faults
from spark_git.core.errors import Blocked, Failed
from spark_git.core.git import Git, branch_ref
from spark_git.core.layout import Layout
from spark_git.gates import attribution
from spark_git.ops.shared.merging.plan import Plan
from spark_git.ops.shared.merging.strays import abort_rebase
from spark_git.state.files import write_atomic
from spark_git.state.models import now
from spark_git.state.store import archive_ref_for

MARKER = ".spark-merge-rebase"  # in the agent dir: "a rebase started by `merge` is in progress"
UPDATE_MARKER = ".spark-update-rebase"  # in the task dir: "a rebase started by `update` is in progress"


def merge_marker(layout: Layout, task: str, agent: str) -> Path:
    return layout.agent_dir(task, agent) / MARKER


def update_marker(layout: Layout, task: str) -> Path:
    return layout.task_dir(task) / UPDATE_MARKER


def recover(layout: Layout, task: str, agent: str, wt: Git) -> list[str]:
    """Cleans up after a merge killed while rebasing the agent's worktree (see `recover_rebase`)."""
    return recover_rebase(merge_marker(layout, task, agent), wt, "merge")


def recover_rebase(marker: Path, wt: Git, who: str) -> list[str]:
    """Aborts a rebase a killed spark-git left behind `marker` (we hold the task mutex, so that process
    is dead). A rebase started by hand, or left on purpose (`sync`, `update --leave-conflict`), has no
    marker and is left alone."""
    done: list[str] = []
    if marker.exists():
        if wt.rebase_in_progress():
            abort_rebase(wt)  # back to the head recorded when the rebase started (also archived)
            done.append(f"aborted the rebase a killed {who} left in {wt.cwd}")
        marker.unlink(missing_ok=True)
    return done


def rebase_onto(layout: Layout, task: str, agent: str, wt: Git, upstream: str, leave_conflicts: bool) -> list[str]:
    """Rebases the agent worktree's branch onto `upstream` (see `rebase_with_marker`)."""
    return rebase_with_marker(merge_marker(layout, task, agent), wt, upstream, leave_conflicts, task, "merge-rebase-returned")


def rebase_with_marker(marker: Path, wt: Git, upstream: str, leave_conflicts: bool, task: str, fault: str) -> list[str]:
    """Rebases the worktree's branch onto `upstream`. Returns the conflicting files (then the rebase
    was aborted and everything restored, unless `leave_conflicts`). While it runs, `marker` says a
    rebase of ours is in progress, so `recover_rebase` can undo it if this process is killed."""
    if not leave_conflicts:
        write_atomic(marker, {"pid": os.getpid(), "upstream": upstream, "at": now()})
    r = wt.rebase(upstream)
    faults.point(fault)  # the rebase may be stopped on a conflict right now
    stopped = wt.rebase_in_progress()
    if r.returncode == 0 and not stopped:
        marker.unlink(missing_ok=True)
        return []
    conflicts = wt.conflicted_files() if stopped else []
    if not stopped:
        marker.unlink(missing_ok=True)
        raise Failed(f"git rebase {upstream} failed in {wt.cwd}:\n{r.stderr.strip()}", task=task)
    if not leave_conflicts:
        wt.rebase_abort()
        marker.unlink(missing_ok=True)
    return conflicts or ["(rebase stopped; see `git status`)"]


def rebase(plan: Plan) -> None:
    """Rebases the agent's branch onto the task head when the task branch moved; a conflict restores
    everything and refuses (exit 3) with the files."""
    git, task, agent = plan.git, plan.task, plan.agent
    if git.is_ancestor(plan.task_head, plan.a_head):
        return
    had = git.rev_parse(archive_ref_for(task, plan.entry.branch, plan.a_head)) is not None
    ref = plan.store.archive(task, plan.entry.branch, plan.a_head, f"branch {plan.entry.branch} before rebasing it", plan.session, event=False)
    conflicts = rebase_onto(plan.layout, task, agent, plan.awt, plan.task_head, leave_conflicts=False)
    if conflicts:
        if not had:  # the branch is back where it was: leave no trace
            git.delete_ref(ref, plan.a_head, message="spark-git merge: conflict, nothing rewritten")
        raise Blocked(
            f"{agent}'s commits conflict with the task branch; nothing was changed",
            hint=f"run `spark-git sync {task} --agent {agent}`, resolve the conflicts in {plan.awt.cwd}, `GIT_EDITOR=true git rebase --continue`, then merge again",
            details={"conflicts": conflicts},
            next=[f"spark-git sync {task} --agent {agent}"],
            task=task,
        )
    plan.archive_ref, plan.archive_is_new, plan.rebased = ref, not had, True
    faults.point("merge-after-rebase")
    old = plan.new
    plan.a_head = plan.awt.head() or plan.a_head
    plan.messages = git.messages(f"{plan.task_head}..{plan.a_head}")
    # rebase keeps the order; commits already upstream are dropped (then the mapping is unknown)
    plan.original = dict(zip(plan.new, old, strict=True)) if len(plan.new) == len(old) else {sha: None for sha in plan.new}


def stamp(plan: Plan) -> None:
    """attribution.mode = "add": replays the new commits with `[agent]` and Spark-* trailers added
    (same trees, authors and dates), then moves the agent branch by compare-and-swap."""
    task, agent = plan.task, plan.agent
    if plan.layout.config.attribution.mode != "add" or not plan.new:
        return
    todo = [sha for sha, msg in plan.messages.items() if not (attribution.attributed_to(msg, agent) and f"Spark-Task: {task}" in msg)]
    if not todo:
        return
    if plan.archive_ref is None:
        # Taken as new without a look (one git process less per merge): should a killed merge have made
        # it already, a refusal removing it loses nothing, the branch being back at that very head.
        plan.archive_is_new = True
        plan.archive_ref = plan.store.archive(task, plan.entry.branch, plan.a_head, f"branch {plan.entry.branch} before stamping it", plan.session, event=False)
    git = plan.git
    parent, mapping = plan.task_head, {}
    for sha in plan.new:
        headers, message = git.commit_object(sha)
        parent = git.commit_tree(headers["tree"][0], [parent], attribution.stamp_message(message, agent, task), _ident_env(headers))
        mapping[sha] = parent
    git.update_ref(branch_ref(plan.entry.branch), parent, plan.a_head, message=f"spark-git merge: attribute commits to {agent}")
    plan.original = {mapping[s]: plan.original.get(s) for s in plan.new}
    plan.messages = {mapping[s]: attribution.stamp_message(plan.messages[s], agent, task) for s in plan.new}
    plan.a_head = parent
    plan.stamped = len(todo)
    faults.point("merge-after-stamp")


def _ident_env(headers: dict[str, list[str]]) -> dict[str, str]:
    env: dict[str, str] = {}
    for key, pre in (("author", "GIT_AUTHOR"), ("committer", "GIT_COMMITTER")):
        name, _, rest = headers[key][0].partition(" <")
        email, _, date = rest.partition("> ")
        env.update({f"{pre}_NAME": name, f"{pre}_EMAIL": email, f"{pre}_DATE": date})
    return env


def undo(plan: Plan, original: str) -> None:
    """A refused merge changes nothing: the agent branch (and its clean worktree) goes back from the
    rebased, stamped head the gate refused to the head it had, and an archive ref this attempt made
    goes too (the original head is the branch's again)."""
    if plan.a_head == original:
        return
    plan.awt.move_checked_out_branch(plan.entry.branch, original, plan.a_head, message="spark-git merge: refused, nothing rewritten")
    if plan.archive_ref is not None and plan.archive_is_new:
        plan.git.delete_ref(plan.archive_ref, original, message="spark-git merge: refused, nothing rewritten")
    plan.a_head = type(plan.a_head)(original)
