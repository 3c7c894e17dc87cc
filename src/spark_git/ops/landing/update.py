"""`update`: bring a task up to date with its base branch after another task landed.

Under the task mutex: the task branch is rebased onto the base head in the (clean) task worktree with
the merge steps' rebase (its marker lets the next run undo a rebase a killed one left); a conflict
restores everything (exit 3) unless `--leave-conflict`. The old head is archived first. Then every
agent branch with no unmerged work moves to the new task head by compare-and-swap; agents with
commits of their own are left alone (`status` shows them behind). An approval whose patch the
rebase did not change is carried to the new head; a changed patch voids it (ops.approvals)."""

from __future__ import annotations

import shlex

from spark_git import protocol
from spark_git.core import faults, gitdrivers
from spark_git.core.errors import Blocked, GitError
from spark_git.core.git import Git, Sha, branch_ref
from spark_git.core.layout import Layout, task_name
from spark_git.core.model import Model
from spark_git.gates import command as gates
from spark_git.ops.shared.ignored import added, not_held, refuse_if
from spark_git.ops.shared.merging.prepare import existing_worktree
from spark_git.ops.shared.merging.rewrite import rebase_with_marker, recover_rebase, update_marker
from spark_git.ops.shared.taskfile import load_task, updating
from spark_git.protocol import approval_holds
from spark_git.state.models import TaskFile, now
from spark_git.state.store import Store, archive_ref_for

ENDED = ("COMPLETE", "CLEANUP", "ABANDONED")


class AgentUpdate(Model):
    agent: str
    old_head: str | None
    new_head: str | None
    moved: bool
    why_not: str | None = None  # why the branch was left where it is


class UpdateData(Model):
    task: str
    base_branch: str
    base_head: str
    old_head: str
    new_head: str
    rebased: bool
    conflicts: list[str] = []  # --leave-conflict: the rebase stopped on these, in the task worktree
    archive_ref: str | None = None
    old_patch_id: str | None = None
    new_patch_id: str | None = None
    approval: str = "none"  # kept | voided | none (what became of the change approval / presentation)
    approval_why: str | None = None  # why it was kept or voided, in words
    resolved: bool = False  # this run took over a rebase `--leave-conflict` left and the coordinator finished
    # old_patch_id: of the approved (or presented) commit; new_patch_id: of the new head
    agents: list[AgentUpdate] = []
    recovered: list[str] = []
    # files the rebase settled through a configured merge driver (union, ours, custom) where both sides
    # changed the same lines: git reports no conflict there, so this is the only place it is told
    combined: list[gitdrivers.Combined] = []


def update(layout: Layout, store: Store, task: str, *, session: str | None, leave_conflict: bool = False) -> UpdateData:
    task = task_name(task)
    with updating(store, task, session) as tf:
        return _update_locked(layout, store, tf, session, leave_conflict)


def _task_worktree(layout: Layout, tf: TaskFile) -> tuple[Git, list[str]]:
    """The task worktree, checked: clean, on the task branch, no rebase of someone else's in progress."""
    task = tf.task_name
    twt = existing_worktree(tf.worktree, "the task worktree", task)
    recovered = recover_rebase(update_marker(layout, task), twt, "update")
    if twt.rebase_in_progress():
        raise Blocked(
            f"a rebase is in progress in the task worktree {twt.cwd} (from `update --leave-conflict` or by hand)",
            hint="resolve the conflicts, `git add` them and `GIT_EDITOR=true git rebase --continue` (or `git rebase --abort`), then update again",
            details={"conflicts": twt.conflicted_files()}, next=[f"cd {shlex.quote(str(twt.cwd))} && git status"], task=task,
        )
    branch, dirty = twt.branch_and_status()
    if branch != tf.task_branch:
        raise Blocked(f"{twt.cwd} is on {branch or 'a detached HEAD'}, expected branch {tf.task_branch}", task=task)
    gates.check_clean(twt, "the task worktree", task, dirty)
    return twt, recovered


def _update_locked(layout: Layout, store: Store, tf: TaskFile, session: str | None, leave_conflict: bool) -> UpdateData:
    task, git = tf.task_name, layout.git()
    if tf.state in ENDED:
        raise Blocked(f"task {task!r} is {tf.state}: there is nothing to update", next=[f"spark-git status {task}"], task=task)
    twt, recovered = _task_worktree(layout, tf)
    head, base_head = git.branch_head(tf.task_branch), git.branch_head(tf.base_branch)
    if head is None or base_head is None:
        raise Blocked(f"branch {tf.task_branch if head is None else tf.base_branch} does not exist", next=[f"spark-git doctor {task}"], task=task)
    d = UpdateData(task=task, base_branch=tf.base_branch, base_head=base_head, old_head=head, new_head=head, rebased=False, recovered=recovered)
    rebasing = not git.is_ancestor(base_head, head)
    base_adds = added(git, f"{head}...{base_head}") if rebasing else []
    refuse_if(twt.cwd, not_held(twt.cwd, base_adds), task=task, what=f"rebasing {task} onto {tf.base_branch}")
    movers = _movers(store, git, tf, head, base_head if rebasing else None, base_adds)  # checked before anything moves
    if rebasing and gitdrivers.declared(twt.cwd, layout.repo.common_dir):
        d.combined = gitdrivers.combined(twt, base_head, head)  # read before: the rebase leaves no trace of it
    if rebasing and not _rebase(layout, store, tf, twt, d, session, leave_conflict):
        return d
    if not rebasing:
        _take_over_resolved(store, tf, d)
    if tf.base_commit != base_head and git.is_ancestor(tf.base_commit, base_head):
        tf.base_commit = base_head  # the task's commits are now base_head..head (who, log, classify)
    d.agents = [_bring_agent(tf, a, movers[a], Sha(d.new_head)) for a in tf.agents]
    _last_merges_follow(git, tf, d)
    cp = tf.checkpoint
    if cp is not None and cp.type == "changes" and cp.commit_sha not in (None, d.new_head) and (d.rebased or cp.approved):
        _carry_approval(layout, tf, d)  # also after a rebase the coordinator finished (--leave-conflict)
    if d.rebased or d.resolved or any(a.moved for a in d.agents):
        store.event(task, "updated", session, base=tf.base_branch, base_head=base_head, old_head=d.old_head, new_head=d.new_head,
                    archive_ref=d.archive_ref, old_patch_id=d.old_patch_id, new_patch_id=d.new_patch_id, approval=d.approval,
                    agents={a.agent: (a.new_head if a.moved else a.why_not) for a in d.agents},
                    combined=[c.model_dump(mode="json") for c in d.combined])
    return d


def _rebase(layout: Layout, store: Store, tf: TaskFile, twt: Git, d: UpdateData, session: str | None, leave_conflict: bool) -> bool:
    """Rebases the task branch onto the base head; False when it stopped on a conflict it left (--leave-conflict)."""
    task, git = tf.task_name, layout.git()
    had = git.rev_parse(archive_ref_for(task, tf.task_branch, d.old_head)) is not None
    d.archive_ref = store.archive(task, tf.task_branch, d.old_head, f"task branch {tf.task_branch} before updating it", session, event=False)
    conflicts = rebase_with_marker(update_marker(layout, task), twt, d.base_head, leave_conflict, task, "update-rebase-returned")
    if conflicts and not leave_conflict:
        if not had:  # everything is back where it was: leave no trace
            git.delete_ref(d.archive_ref, d.old_head, message="spark-git update: conflict, nothing rewritten")
        raise Blocked(
            f"{task} conflicts with {tf.base_branch} ({d.base_head[:12]}); nothing was changed",
            hint=f"run `spark-git update {task} --leave-conflict`, resolve the conflicts in {twt.cwd}, `GIT_EDITOR=true git rebase --continue`, then `spark-git update {task}`",
            details={"conflicts": conflicts}, next=[f"spark-git update {task} --leave-conflict"], task=task,
        )
    if conflicts:
        d.conflicts = conflicts
        store.event(task, "update_conflict", session, base_head=d.base_head, old_head=d.old_head, archive_ref=d.archive_ref, conflicts=conflicts)
        return False
    faults.point("update-after-rebase")
    d.new_head = git.branch_head(tf.task_branch) or d.old_head
    d.rebased = True
    return True


def _last_merges_follow(git: Git, tf: TaskFile, d: UpdateData) -> None:
    """The agents' merged work is on the new head now (rebased, and after a resolved conflict with
    another patch): their last merges follow, so no record points at a commit the branch left."""
    if d.new_head == d.old_head:
        return
    moved = {a.agent for a in d.agents if a.moved}
    for agent, e in tf.agents.items():
        if e.last_merge_sha and (agent in moved or git.is_ancestor(e.last_merge_sha, d.old_head)):
            e.last_merge_sha = d.new_head


def _take_over_resolved(store: Store, tf: TaskFile, d: UpdateData) -> None:
    """A rebase `update --leave-conflict` left, finished by the coordinator: this run reports it as the
    update it is (the head before it, its archive ref), so the output and the audit event name the
    real old head and what became of the approval."""
    trail = store.read_audit(tf.task_name)
    for e in reversed(trail.events if trail else []):
        if e.get("kind") == "updated":
            return  # the last conflict was taken over (or aborted and updated) already
        if e.get("kind") == "update_conflict":
            old = e.get("old_head")
            if isinstance(old, str) and old != d.new_head and old != d.old_head:
                d.old_head, d.archive_ref, d.resolved = old, e.get("archive_ref"), True
            return


def _was_merged(store: Store, git: Git, tf: TaskFile, a_head: Sha) -> bool:
    """The agent's head is contained in the task branch as it was before some update (its archived heads)."""
    prefix = archive_ref_for(tf.task_name, tf.task_branch, "").rstrip("/") + "/"
    return any(r.ref.startswith(prefix) and git.is_ancestor(a_head, r.sha) for r in store.archived(tf.task_name))


def _movers(store: Store, git: Git, tf: TaskFile, head: Sha, onto: Sha | None, base_adds: list[str]) -> dict[str, AgentUpdate]:
    """Per agent, where it is and whether update will bring it to the new task head (no unmerged work: in the
    task head, an archived one or, rebasing `onto` the base head, in that). Before anything moves, every
    agent it will bring along is checked for files git does not hold that the new head adds (Blocked)."""
    heads = git.refs(*(branch_ref(e.branch) for e in tf.agents.values())) if tf.agents else {}
    res: dict[str, AgentUpdate] = {}
    for agent, entry in tf.agents.items():
        a_head = heads.get(branch_ref(entry.branch))
        res[agent] = AgentUpdate(agent=agent, old_head=a_head, new_head=a_head, moved=False)
        if a_head is None or (a_head == head and onto is None):
            res[agent].why_not = "no branch" if a_head is None else "already at the task head"
        elif a_head == head or git.is_ancestor(a_head, head) or _was_merged(store, git, tf, a_head) or (onto is not None and git.is_ancestor(a_head, onto)):
            # the new head has the base's additions and the task's since a_head (the rebase keeps both)
            _refuse_in_the_way(tf, agent, base_adds + (added(git, a_head, head) if a_head != head else []))
        else:
            res[agent].why_not = "has unmerged commits (behind the task head until it syncs)"
    return res


def _refuse_in_the_way(tf: TaskFile, agent: str, paths: list[str]) -> None:
    entry = tf.agents[agent]
    awt = Git(entry.worktree)
    there = not_held(awt.cwd, paths) if awt.cwd.is_dir() else []
    if there and _movable(awt, entry.branch):  # one it will leave where it is loses nothing
        refuse_if(awt.cwd, there, task=tf.task_name, what=f"bringing {agent} to the new head of {tf.task_branch}")


def _movable(awt: Git, branch: str) -> bool:
    if not awt.cwd.is_dir():
        return False
    on, dirty = awt.branch_and_status()
    return on == branch and not dirty and not awt.rebase_in_progress()


def _bring_agent(tf: TaskFile, agent: str, seen: AgentUpdate, new_head: Sha) -> AgentUpdate:
    """Moves the agent's branch to the task head if `_movers` found no unmerged work (compare-and-swap, files too)."""
    entry, a_head = tf.agents[agent], seen.old_head
    if seen.why_not is not None or a_head is None or a_head == new_head:
        seen.why_not = seen.why_not or "already at the task head"
        return seen
    awt = Git(entry.worktree)
    if not _movable(awt, entry.branch):
        seen.why_not = "its worktree is missing, not on its branch or not clean"
        return seen
    try:
        awt.move_checked_out_branch(entry.branch, new_head, a_head, message=f"spark-git update {tf.task_name}: {agent} to the task head")
    except GitError as e:  # it moved meanwhile (the agent committed): leave it
        seen.why_not = f"could not move it: {e.stderr.strip() or e}"
        return seen
    return AgentUpdate(agent=agent, old_head=a_head, new_head=new_head, moved=True)


def _carry_approval(layout: Layout, tf: TaskFile, d: UpdateData) -> None:
    """An unchanged patch keeps the approval (and the presentation): old head → new head, same patch id."""
    git, cp = layout.git(), tf.checkpoint
    assert cp is not None and cp.commit_sha is not None
    d.new_patch_id = git.patch_id(d.base_head, d.new_head)
    d.old_patch_id = cp.patch_id or git.patch_id(d.base_head, cp.commit_sha)
    if approval_holds(git, d.base_head, cp.commit_sha, cp.patch_id, d.new_head):
        tf.checkpoint_history.append({"decision": "carried", "from": cp.commit_sha, "to": d.new_head, "patch_id": d.new_patch_id,
                                      "approved": cp.approved, "at": now(), "by": "spark-git update"})
        cp.commit_sha, cp.patch_id, d.approval = d.new_head, d.new_patch_id, "kept"
        d.approval_why = f"the patch is unchanged (patch id {(d.new_patch_id or '-')[:12]}): the approval of {d.old_head[:12]} holds for {d.new_head[:12]}"
        return
    tf.checkpoint_history.append({"decision": "voided", "commit_sha": cp.commit_sha, "patch_id": cp.patch_id, "new_head": d.new_head,
                                  "new_patch_id": d.new_patch_id, "approved": cp.approved, "at": now(), "by": "spark-git update"})
    cp.approved, d.approval = False, "voided"
    d.approval_why = (f"the patch changed (patch id {(d.old_patch_id or '-')[:12]} → {(d.new_patch_id or '-')[:12]}"
                      f"{', a conflict was resolved' if d.resolved else ''}): the human approves {d.new_head[:12]} again")



def next_step(store: Store, d: UpdateData) -> str:
    """After an update: the human's approval again when it was voided (under protocol "full" the
    protocol's own way back first: a head other than the one presented needs a new round), `complete`
    when it holds."""
    if d.approval == "none":
        return f"spark-git status {d.task}"
    tf = load_task(store, d.task)
    way = [u.fix for u in protocol.complete_conditions(store, tf, d.new_head) if u.fix]
    if way:
        return way[0]
    return f"spark-git approve {d.task} --changes" if d.approval == "voided" else f"spark-git complete {d.task}"
