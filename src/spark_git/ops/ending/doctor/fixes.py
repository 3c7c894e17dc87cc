"""Doctor's repairs (`--fix`): each re-checks what it found under the task mutex first (the owner may
have finished since) and archives whatever could drop a commit or a file before it acts."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel

from spark_git.core import paths
from spark_git.core.git import ZERO_SHA, Git, Worktree, branch_ref
from spark_git.ops.ending.doctor.scan import Ctx, parses
from spark_git.ops.shared import archive
from spark_git.ops.shared.merging.rewrite import MARKER
from spark_git.ops.shared.merging.strays import abort_rebase
from spark_git.ops.shared.worktrees import stray_agent_branch
from spark_git.state import audit
from spark_git.state.files import write_atomic
from spark_git.state.locks import WORKTREES, mutex
from spark_git.state.models import TaskFile
from spark_git.state.report_evidence import AgentStatus


def fix_corrupt(ctx: Ctx, task: str, path: Path, aside: Path, fresh: Callable[[], BaseModel] | None, model: type[BaseModel]) -> Callable[[], None]:
    def fix() -> None:
        if parses(path, model):
            return  # repaired (or rewritten) since we looked
        os.replace(path, aside)
        new = fresh() if fresh is not None else None
        if isinstance(new, AgentStatus):
            ctx.store.write_status(new)  # through the Store: MAC'd, or it would count as forged
        elif new is not None:
            write_atomic(path, new)
        if path.name != "audit-trail.json" or fresh is not None:
            audit.event(ctx.layout, task, "doctor_moved_corrupt_file", ctx.session, path=str(path), kept_as=str(aside))
    return fix


def _admin_dir(worktree: Path) -> Path | None:
    """The worktree's own git dir (no git process: doctor looks at every worktree)."""
    return paths.git_dir_of(worktree)


def operation(worktree: Path) -> str | None:
    d = _admin_dir(worktree)
    if d is None:
        return None
    if (d / "rebase-merge").exists() or (d / "rebase-apply").exists():
        return "rebase"
    for name, what in (("MERGE_HEAD", "merge"), ("CHERRY_PICK_HEAD", "cherry-pick"), ("REVERT_HEAD", "revert")):
        if (d / name).exists():
            return what
    return None


def repair(ctx: Ctx, path: Path) -> None:
    with mutex(ctx.layout, WORKTREES):
        ctx.git.run("worktree", "repair", str(path))
        if path.resolve() not in {wt.path.resolve() for wt in ctx.git.worktrees()}:
            raise OSError(f"git worktree repair could not re-register {path}: move it aside and run doctor --fix again")


def readd(ctx: Ctx, task: str, wt: Worktree | None, path: Path, branch: str) -> None:
    with mutex(ctx.layout, WORKTREES):
        now_wt = {w.path.resolve(): w for w in ctx.git.worktrees()}.get(path.resolve())
        if now_wt is not None and not now_wt.prunable and path.is_dir():
            return  # someone re-created it since we looked
        if wt is not None and wt.detached and wt.head:
            archive.keep(ctx.store, task, f"detached-{path.parent.name}", wt.head, f"detached HEAD of vanished {path}", ctx.session)
        ctx.git.worktree_prune()
        if path.is_dir():
            path.rmdir()  # empty (checked): git refuses to add into an existing directory otherwise
        path.parent.mkdir(parents=True, exist_ok=True)
        ctx.git.worktree_add(path, branch)


def abort(ctx: Ctx, task: str, label: str, path: Path, op: str, branch: str) -> None:
    if operation(path) != op:
        return  # finished or aborted by its owner (e.g. the merge we waited for) since we looked
    wg = Git(path)
    dirty = [str(e) for e in wg.status()]
    if dirty:
        archive.keep_uncommitted(ctx.store, task, label, path, dirty, ctx.session)
    head = wg.rev_parse("HEAD")
    if head and not ctx.contained(head, branch_ref(branch)):
        archive.keep(ctx.store, task, f"{op}-head-{label}", head, f"HEAD of the {op} left in {path}", ctx.session)
    if op == "rebase":
        abort_rebase(wg)
    else:
        wg.abort_operation(op)
    if label != "task":
        (ctx.layout.agent_dir(task, label) / MARKER).unlink(missing_ok=True)
    audit.event(ctx.layout, task, "doctor_aborted", ctx.session, operation=op, worktree=str(path))


def recreate_branch(ctx: Ctx, task: str, branch: str, head: str) -> None:
    with mutex(ctx.layout, WORKTREES):
        if ctx.git.branch_head(branch) is not None:
            return  # re-created by someone since we looked
        ctx.git.update_ref(branch_ref(branch), head, ZERO_SHA, message=f"spark-git doctor: recover deleted {branch} from its worktree's reflog")
    audit.event(ctx.layout, task, "doctor_recovered_branch", ctx.session, branch=branch, head=head)


def switch(ctx: Ctx, task: str, label: str, path: Path, branch: str) -> None:
    wg = Git(path)
    if wg.current_branch() == branch:
        return
    head = wg.rev_parse("HEAD")
    if head and not ctx.contained(head, branch_ref(branch)):
        archive.keep(ctx.store, task, f"head-{label}", head, f"HEAD of {path} before switching to {branch}", ctx.session)
    wg.run("switch", "--quiet", branch)


def _named_now(ctx: Ctx, task: str) -> set[str]:
    """Branches task.json names now (re-read under the task mutex: an `agent add` may have finished)."""
    cur = ctx.store.read_task_here(task)
    return {e.branch for e in cur.agents.values()} | {cur.task_branch} if cur else set()


def remove_stray(ctx: Ctx, tf: TaskFile, p: Path, wt: Worktree) -> None:
    if wt.branch and wt.branch in _named_now(ctx, tf.task_name):
        return
    label = p.parent.name if p.name == "code" else p.name
    if p.is_dir():
        dirty = [str(e) for e in Git(p).status()]
        if dirty:
            archive.keep_uncommitted(ctx.store, tf.task_name, label, p, dirty, ctx.session)
    if wt.head and not ctx.contained(wt.head, branch_ref(tf.task_branch), tf.base_branch):
        archive.keep(ctx.store, tf.task_name, wt.branch or f"detached-{label}", wt.head, f"HEAD of stray worktree {p}", ctx.session)
    with mutex(ctx.layout, WORKTREES):
        if p.is_dir():
            ctx.git.run("worktree", "remove", "--force", "--force", str(p))
        ctx.git.worktree_prune()
        if wt.branch and wt.head and ctx.git.branch_head(wt.branch) == wt.head and _spark_agent_branch(ctx, tf.task_name, wt.branch):
            ctx.git.delete_ref(branch_ref(wt.branch), wt.head, message="spark-git doctor: stray agent branch (archived)")


def _spark_agent_branch(ctx: Ctx, task: str, b: str) -> bool:
    """`b` is an agent branch of `task` alone and spark-git created it: never delete a user's branch."""
    return stray_agent_branch(ctx.layout, ctx.store, ctx.git, task, b)


def drop_branch(ctx: Ctx, tf: TaskFile, b: str, sha: str) -> None:
    if b in _named_now(ctx, tf.task_name) or not _spark_agent_branch(ctx, tf.task_name, b):
        return
    if not ctx.contained(sha, branch_ref(tf.task_branch), tf.base_branch):
        archive.keep(ctx.store, tf.task_name, b, sha, f"stray branch {b}", ctx.session)
    with mutex(ctx.layout, WORKTREES):
        ctx.git.delete_ref(branch_ref(b), sha, message="spark-git doctor: stray agent branch")
