"""Doctor's checks of one task: its files, its lock, its worktrees and branches, its recorded merges,
and what an interrupted `agent add` left. Every lookup goes to the run's index (scan.Ctx)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

from pydantic import BaseModel

from spark_git import protocol
from spark_git.core.errors import CorruptState, GitError
from spark_git.core.git import Git, Worktree, branch_ref
from spark_git.core.gitmerge import missing_patches
from spark_git.ops.ending.doctor import fixes
from spark_git.ops.ending.doctor.runs import check_runs
from spark_git.ops.ending.doctor.scan import Ctx, Finding, idle_minutes
from spark_git.ops.shared import keep
from spark_git.ops.shared.merging.rewrite import MARKER
from spark_git.ops.shared.taskfile import load_task, save_task
from spark_git.ops.shared.worktrees import lost_head, stray_agent_branch
from spark_git.state import audit
from spark_git.state.files import read_optional
from spark_git.state.locks import idle_for
from spark_git.state.models import AuditSnapshot, AuditTrail, TaskFile, now
from spark_git.state.recorded import layout_problem
from spark_git.state.report_evidence import AgentStatus

ENDED = ("CLEANUP", "ABANDONED")


def check_task(ctx: Ctx, task: str, tf: TaskFile | CorruptState | None) -> None:
    """`tf`: the task's task.json as read at the start of the run."""
    layout = ctx.layout
    check_files(ctx, task)
    check_runs(ctx, task)
    if isinstance(tf, CorruptState):
        ctx.add(Finding(where=task, kind="task-json-corrupt", problem=tf.message,
                        repair=f"spark-git lock break {task} --why TEXT  (keeps the corrupt file beside it and rebuilds the lock from git and the audit trail for your session)"))
        return
    if tf is None:
        trees = [p for p, _ in ctx.worktrees_under(task)]
        if trees or layout.task_worktree(task).is_dir():
            ctx.add(Finding(where=task, kind="worktree-without-lock",
                            problem=f"worktree(s) {', '.join(map(str, trees or [layout.task_worktree(task)]))} exist but no task.json owns them",
                            repair=f"spark-git lock break {task} --why TEXT  (adopts the task for your session; then `spark-git abandon {task} --why TEXT` or carry on)"))
        return
    check_owner(ctx, tf)
    if tf.state in ENDED:
        ctx.add(Finding(where=task, kind="end-interrupted", broken=False,
                        problem=f"task is {tf.state} but its lock is still there: `{'cleanup' if tf.state == 'CLEANUP' else 'abandon'}` was interrupted",
                        repair=f"spark-git {'cleanup' if tf.state == 'CLEANUP' else 'abandon'} {task}" + ("" if tf.state == "CLEANUP" else " --why TEXT") + f" --session {tf.session_id}"))
        return
    if tf.provisioning != "done":
        ctx.add(Finding(where=task, kind="start-interrupted", broken=False,
                        problem="`start` was interrupted before every worktree existed",
                        repair=f"spark-git start {task} --session {tf.session_id}  (the owner resumes it)"))
        return
    check_state_log(ctx, tf)
    problem = layout_problem(layout, tf)
    if problem is not None:  # nothing is repaired at a path or branch the layout does not derive
        ctx.add(Finding(where=task, kind="task-json-paths", problem=f"{layout.task_json(task)}: {problem}",
                        repair=f"restore task.json's paths and branches to the layout's, or spark-git lock break {task} --why TEXT (rebuilds it)"))
        return
    expected = [("task", Path(tf.worktree), tf.task_branch)] + [(a, Path(e.worktree), e.branch) for a, e in tf.agents.items()]
    resolved = [p.resolve() for _, p, _ in expected]
    for (label, path, branch), real in zip(expected, resolved, strict=True):
        check_worktree(ctx, tf, label, path, branch, real)
        check_submodules(ctx, task, label, path)
    check_merges(ctx, tf)
    check_strays(ctx, tf, set(resolved))


def check_submodules(ctx: Ctx, task: str, label: str, path: Path) -> None:
    """Initialised submodules moved past the commit the superproject records: their new commits exist
    only in the submodule's repository (in the worktree's admin dir). A note: cleanup/abandon archive
    them before removing the worktree."""
    if not (path / ".gitmodules").is_file():
        return
    for rel, head in keep.submodules(path, moved_only=True):
        ctx.add(Finding(where=f"{task}/{label}", kind="submodule-commits-only-here", broken=False,
                        problem=f"submodule {rel} in {path} is at {head[:12]}, not the commit the task branch records: its new commits live only in that submodule's repository",
                        repair=f"push it where it belongs (cd {path / rel} && git push); cleanup/abandon archive it before removing the worktree"))


def check_files(ctx: Ctx, task: str) -> None:
    layout = ctx.layout
    files: list[tuple[Path, type[BaseModel], Callable[[], BaseModel] | None]] = [
        (layout.audit_trail(task), AuditTrail, lambda: AuditTrail(task_name=task)),
        (layout.task_dir(task) / "audit-snapshot.json", AuditSnapshot, None),
    ]
    agents_dir = layout.task_dir(task) / "agents"
    if agents_dir.is_dir():
        for d in sorted(agents_dir.iterdir()):
            files.append((d / "status.json", AgentStatus, partial(AgentStatus, agent=d.name, task=task)))
    for path, model, fresh in files:
        try:
            read_optional(path, model)
        except CorruptState as e:
            aside = path.with_name(f"{path.name}.corrupt-{now().replace(':', '')}")
            what = f"move it to {aside.name}" + (" and start a fresh one" if fresh else "")
            ctx.add(Finding(where=task, kind=f"{path.name.removesuffix('.json')}-corrupt", problem=e.message, repair=f"--fix: {what} (nothing is deleted)"),
                    fixes.fix_corrupt(ctx, task, path, aside, fresh, model), task)


def check_owner(ctx: Ctx, tf: TaskFile) -> None:
    if ctx.session == tf.session_id:
        return
    minutes = idle_minutes(tf.last_active_at)
    if minutes is not None and minutes >= ctx.layout.config.stale_minutes:
        ctx.add(Finding(where=tf.task_name, kind="lock-idle", broken=False,
                        problem=f"owned by session {tf.session_id}, {idle_for(tf.last_active_at)}",
                        repair=f"spark-git lock break {tf.task_name} --why TEXT  (only if that session is really gone)",
                        details={"owner": tf.session_id, "last_active_at": tf.last_active_at}))


def check_state_log(ctx: Ctx, tf: TaskFile) -> None:
    mismatch = bool(tf.transition_log) and tf.transition_log[-1].to != tf.state
    for problem in protocol.consistency_problems(ctx.store, tf):  # the state machine's own view of what the log cannot explain
        if mismatch and problem.kind == protocol.STATE_LOG_MISMATCH:
            continue  # the plain state/log mismatch: reported below, with its fix
        if problem.kind == protocol.FORGED_LOG:
            ctx.add(Finding(where=tf.task_name, kind="transitions-forged", problem=str(problem),
                            repair=f"compare it with `spark-git audit {tf.task_name}`; a walk you did not make: spark-git abandon {tf.task_name} --why TEXT, "
                                   f"or move {ctx.layout.task_json(tf.task_name)} aside and `spark-git lock break {tf.task_name} --why TEXT` rebuilds it "
                                   "from git and the audit trail, MAC'd"))
            continue
        ctx.add(Finding(where=tf.task_name, kind="state-inconsistent", problem=str(problem),
                        repair=f"inspect {ctx.layout.task_json(tf.task_name)} against `spark-git audit {tf.task_name}`; then fix it by hand or spark-git abandon {tf.task_name} --why TEXT"))
    if tf.transition_log and tf.transition_log[-1].to != tf.state:
        last = tf.transition_log[-1].to
        task = tf.task_name

        def fix() -> None:
            cur = load_task(ctx.store, task, check=False)
            if cur.transition_log and cur.transition_log[-1].to != cur.state:
                old = cur.state
                cur.state = cur.transition_log[-1].to  # type: ignore[assignment]
                save_task(ctx.store, cur)
                audit.event(ctx.layout, task, "doctor_state_repaired", ctx.session, was=old, now=cur.state)

        ctx.add(Finding(where=task, kind="state-vs-log", problem=f"state is {tf.state} but the last transition in transition_log goes to {last}",
                        repair=f"--fix: set state to {last} (the append-only log is the record)"), fix, task)


def check_worktree(ctx: Ctx, tf: TaskFile, label: str, path: Path, branch: str, real: Path) -> None:
    """`real`: `path` resolved."""
    task = tf.task_name
    wt = ctx.registered.get(real)
    where = f"{task}/{label}"
    ctx.handled.add(real)
    if wt is None or wt.prunable or not path.is_dir():
        _check_missing_worktree(ctx, task, label, path, branch, wt)
        return
    if ctx.heads.get(branch_ref(branch)) is None and wt.branch == branch:
        _check_deleted_branch(ctx, task, label, path, branch)
        return
    op = fixes.operation(path)
    if op is not None:
        by_merge = label != "task" and (ctx.layout.agent_dir(task, label) / MARKER).exists()
        if by_merge or op != "rebase":
            ctx.add(Finding(where=where, kind=f"{op}-in-progress", problem=f"a {op} was left half-done in {path}" + (" by a killed `spark-git merge`" if by_merge else ""),
                            repair=f"--fix: archive the worktree's state and HEAD, then git {op} --abort"),
                    lambda: fixes.abort(ctx, task, label, path, op, branch), task)
        else:
            ctx.add(Finding(where=where, kind="rebase-in-progress", broken=False, problem=f"a rebase is in progress in {path} (e.g. `spark-git sync` left conflicts to resolve)",
                            repair=f"cd {path} && resolve, git add, GIT_EDITOR=true git rebase --continue  (or git rebase --abort)"))
        return
    if wt.branch == branch:
        return
    dirty = [str(e) for e in Git(path).status()]
    if wt.detached:
        problem = f"{path} is on a detached HEAD {(wt.head or '?')[:12]}, expected branch {branch}"
        unref = wt.head is not None and not ctx.contained(wt.head, branch_ref(branch), tf.base_branch)
        if unref:
            problem += " with commits no branch references"
    else:
        problem = f"{path} is on branch {wt.branch}, expected {branch}"
    if dirty:
        ctx.add(Finding(where=where, kind="wrong-branch", problem=problem + f"; it has uncommitted changes ({len(dirty)} file(s))",
                        repair=f"cd {path} && commit or stash the changes, then git switch {branch}", details={"dirty": dirty}))
        return
    ctx.add(Finding(where=where, kind="wrong-branch", problem=problem, repair=f"--fix: archive HEAD, then git switch {branch} in {path}"),
            lambda: fixes.switch(ctx, task, label, path, branch), task)


def _check_deleted_branch(ctx: Ctx, task: str, label: str, path: Path, branch: str) -> None:
    """The worktree is there but its branch was deleted under it (`git update-ref -d`, `branch -D` elsewhere)."""
    head = lost_head(path)
    where = f"{task}/{label}"
    if head is None:
        ctx.add(Finding(where=where, kind="branch-deleted", problem=f"branch {branch} of worktree {path} was deleted and its worktree's reflog holds no commit",
                        repair=f"spark-git archive list {task}  (then spark-git archive restore REF --branch {branch})"))
        return
    ctx.add(Finding(where=where, kind="branch-deleted", problem=f"branch {branch} of worktree {path} was deleted; the worktree was last at {head[:12]}",
                    repair=f"--fix: re-create {branch} at {head[:12]} (from the worktree's reflog)"),
            partial(fixes.recreate_branch, ctx, task, branch, head), task)


def _check_missing_worktree(ctx: Ctx, task: str, label: str, path: Path, branch: str, wt: Worktree | None) -> None:
    """The worktree is not registered (`wt` None), is prunable, or its directory is gone."""
    where = f"{task}/{label}"
    if path.is_dir() and any(path.iterdir()):
        if (path / ".git").is_file() and wt is None:
            ctx.add(Finding(where=where, kind="worktree-unregistered", problem=f"{path} looks like a worktree but git does not list it",
                            repair=f"--fix: git worktree repair {path}"), lambda: fixes.repair(ctx, path), task)
        else:
            ctx.add(Finding(where=where, kind="worktree-not-a-worktree", problem=f"{path} holds files but is not a worktree",
                            repair=f"move {path} aside (it may hold work), then `spark-git doctor --fix` re-creates the worktree"))
        return
    if ctx.heads.get(branch_ref(branch)) is None:
        ctx.add(Finding(where=where, kind="branch-missing", problem=f"worktree {path} and its branch {branch} are both gone",
                        repair=f"spark-git archive list {task}  (restore the branch with `spark-git archive restore REF --branch {branch}` if it was archived), or spark-git abandon {task} --why TEXT"))
        return
    kind = "worktree-dir-gone" if wt is not None else ("lock-without-worktree" if label == "task" else "branch-without-worktree")
    problem = f"{'registered worktree' if wt is not None else 'worktree'} {path} of branch {branch} is gone"
    ctx.add(Finding(where=where, kind=kind, problem=problem, repair=f"--fix: git worktree prune; git worktree add {path} {branch}  (the branch keeps every commit)"),
            lambda: fixes.readd(ctx, task, wt, path, branch), task)


def check_merges(ctx: Ctx, tf: TaskFile) -> None:
    th = ctx.heads.get(branch_ref(tf.task_branch))
    for a, e in tf.agents.items():
        sha = e.last_merge_sha
        if not sha or th is None:
            continue
        if not ctx.merged_into(sha, th) and not _in_updated_head(ctx, tf, sha, th):
            ctx.add(Finding(where=f"{tf.task_name}/{a}", kind="last-merge-not-in-task-branch",
                            problem=f"last_merge_sha {sha[:12]} of agent {a} is not an ancestor of task branch {tf.task_branch} (the task branch was rewritten)",
                            repair=f"git log --oneline {tf.task_branch}..{sha}  (see what was lost), keep it: git update-ref refs/spark/archive/{tf.task_name}/lost-merge-{a}/{sha[:12]} {sha}; then spark-git merge {tf.task_name} --agent {a}"))


def _in_updated_head(ctx: Ctx, tf: TaskFile, sha: str, head: str) -> bool:
    """The task branch was rewritten (by `update`, perhaps killed before it recorded anything), but
    every commit of the merged work has an equivalent patch on it: nothing was lost."""
    try:
        return not missing_patches(ctx.git, head, sha, tf.base_commit)
    except GitError:  # e.g. the base commit is gone: report it as the rewrite it may be
        return False


def check_strays(ctx: Ctx, tf: TaskFile, expected: set[Path]) -> None:
    """Worktrees under the task dir and agent branches of this task that task.json does not name: left
    by a killed `agent add`. Archived (if they hold anything new) and removed."""
    task = tf.task_name
    named = {e.branch for e in tf.agents.values()} | {tf.task_branch}
    for p, wt in ctx.worktrees_under(task):
        if p in expected:  # registered paths are already resolved
            continue
        ctx.handled.add(p)
        ctx.add(Finding(where=task, kind="stray-worktree", problem=f"worktree {p} ({wt.branch or 'detached'}) is not in task.json (an interrupted `agent add`?)",
                        repair="--fix: archive its uncommitted work and HEAD, then remove it"),
                partial(fixes.remove_stray, ctx, tf, p, wt), task)
        if wt.branch:
            named.add(wt.branch)  # handled with its worktree
    for b in stray_branches(ctx, task, named):
        sha = ctx.heads[f"refs/heads/{b}"]
        ctx.add(Finding(where=task, kind="stray-agent-branch", problem=f"agent branch {b} has no worktree and is not in task.json (an interrupted `agent add`?)",
                        repair=f"--fix: archive {b} if it holds commits the task branch lacks, then delete it"),
                partial(fixes.drop_branch, ctx, tf, b, sha), task)


def stray_branches(ctx: Ctx, task: str, named: set[str]) -> list[str]:
    """Agent branches of `task` that task.json does not name: only those the templates give to this
    task alone and whose reflog shows spark-git created them (a look-alike is someone else's)."""
    prefix = ctx.layout.agent_branch(task, "\0").split("\0")[0]
    checked_out = {wt.branch for wt in ctx.registered.values() if wt.branch}  # a stray has no worktree
    return [b for b in (ctx.branches_with_prefix(prefix) if prefix else [])
            if b not in named and b not in checked_out and stray_agent_branch(ctx.layout, ctx.store, ctx.git, task, b)]
