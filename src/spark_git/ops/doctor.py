"""`spark-git doctor [<task>] [--fix]`: finds what crashes leave behind and says how to repair each.

Detection reads only. `--fix` repairs what needs no judgement and loses nothing: whatever could drop
a commit or a file is archived first (refs/spark/archive/...), corrupt files are moved aside, never
deleted. What needs a human (another session's lock, a worktree without a lock, a rewritten task
branch) is only reported, with the command. spark-git's own mutex files are never touched.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from pydantic import BaseModel

from spark_git import protocol
from spark_git.core.errors import CorruptState, SparkError
from spark_git.core.git import Git, Worktree, branch_ref
from spark_git.core.layout import Layout, task_name, within
from spark_git.ops import archive
from spark_git.state import audit
from spark_git.state.files import read_optional, write_atomic
from spark_git.state.locks import WORKTREES, idle_for, mutex, task_mutex_name
from spark_git.state.models import AgentStatus, AuditSnapshot, AuditTrail, MainLock, TaskFile, now, parse_time

ENDED = ("CLEANUP", "ABANDONED")


class Finding(BaseModel):
    where: str  # task name, "main lock", "git"
    kind: str  # stable identifier, e.g. "worktree-missing"
    problem: str
    repair: str  # the exact command, or what --fix does
    broken: bool = True  # False: a note (idle lock, interrupted command its owner resumes)
    fixable: bool = False  # --fix repairs it
    fixed: bool = False
    error: str | None = None  # why a fix failed
    details: dict[str, Any] = {}


class DoctorData(BaseModel):
    tasks_checked: int
    findings: list[Finding]
    broken: int  # problems that remain
    fixed: int


@dataclass
class _Ctx:
    layout: Layout
    git: Git
    session: str | None
    registered: dict[Path, Worktree]
    heads: dict[str, str]
    findings: list[tuple[Finding, Callable[[], None] | None, str | None]] = field(default_factory=list)
    handled: set[Path] = field(default_factory=set)  # worktree paths a task check already reported

    def add(self, f: Finding, fix: Callable[[], None] | None = None, task: str | None = None) -> None:
        f.fixable = fix is not None
        self.findings.append((f, fix, task))

    def contained(self, sha: str, *refs: str) -> bool:
        for r in refs:
            if r and self.git.rev_parse(r) is not None and self.git.is_ancestor(sha, r):
                return True
        return False


def run(layout: Layout, only: str | None = None, *, fix: bool = False, session: str | None = None) -> DoctorData:
    git = layout.git()
    if only is not None:
        task_name(only)
        if not layout.task_dir(only).is_dir():
            from spark_git.core.errors import BadInput

            raise BadInput(f"no task {only!r}: {layout.task_dir(only)} does not exist", hint="`spark-git status` lists the tasks", next=["spark-git status"], task=only)
    ctx = _Ctx(layout, git, session, {wt.path.resolve(): wt for wt in git.worktrees()}, dict(git.refs("refs/heads/")))
    names = [only] if only else layout.task_names()
    for name in names:
        _check_task(ctx, name)
    _check_main_lock(ctx)
    _check_prunable(ctx, names if only else None)
    _check_git_locks(ctx, names if only else None)
    if fix:
        for f, fn, task in ctx.findings:
            if fn is None:
                continue
            try:
                if task is not None:
                    with mutex(layout, task_mutex_name(task)):
                        fn()
                else:
                    fn()
                f.fixed = True
            except (SparkError, OSError) as e:
                f.error = getattr(e, "message", None) or str(e)
    found = [f for f, _, _ in ctx.findings]
    return DoctorData(
        tasks_checked=len(names), findings=found,
        broken=sum(1 for f in found if f.broken and not f.fixed), fixed=sum(1 for f in found if f.fixed),
    )


# -- per task ------------------------------------------------------------------------------------


def _check_task(ctx: _Ctx, task: str) -> None:
    layout = ctx.layout
    _check_files(ctx, task)
    try:
        tf = read_optional(layout.task_json(task), TaskFile)
    except CorruptState as e:
        ctx.add(Finding(where=task, kind="task-json-corrupt", problem=e.message,
                        repair=f"spark-git lock break {task} --why TEXT  (keeps the corrupt file beside it and rebuilds the lock from git and the audit trail for your session)"))
        return
    if tf is None:
        root = layout.task_dir(task).resolve()
        trees = [p for p in ctx.registered if p.is_relative_to(root)]
        if trees or layout.task_worktree(task).is_dir():
            ctx.add(Finding(where=task, kind="worktree-without-lock",
                            problem=f"worktree(s) {', '.join(map(str, trees or [layout.task_worktree(task)]))} exist but no task.json owns them",
                            repair=f"spark-git lock break {task} --why TEXT  (adopts the task for your session; then `spark-git abandon {task} --why TEXT` or carry on)"))
        return
    _check_owner(ctx, tf)
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
    _check_state_log(ctx, tf)
    expected = [("task", Path(tf.worktree), tf.task_branch)] + [(a, Path(e.worktree), e.branch) for a, e in tf.agents.items()]
    for label, path, branch in expected:
        _check_worktree(ctx, tf, label, path, branch)
    _check_merges(ctx, tf)
    _check_strays(ctx, tf, {p.resolve() for _, p, _ in expected})


def _check_files(ctx: _Ctx, task: str) -> None:
    layout = ctx.layout
    files: list[tuple[Path, type[BaseModel], Callable[[], BaseModel] | None]] = [
        (layout.audit_trail(task), AuditTrail, lambda: AuditTrail(task_name=task)),
        (layout.task_dir(task) / "audit-snapshot.json", AuditSnapshot, None),
    ]
    agents_dir = layout.task_dir(task) / "agents"
    if agents_dir.is_dir():
        for d in sorted(agents_dir.iterdir()):
            files.append((d / "status.json", AgentStatus, (lambda a=d.name: AgentStatus(agent=a, task=task))))
    for path, model, fresh in files:
        try:
            read_optional(path, model)
        except CorruptState as e:
            aside = path.with_name(f"{path.name}.corrupt-{now().replace(':', '')}")
            what = f"move it to {aside.name}" + (" and start a fresh one" if fresh else "")
            ctx.add(Finding(where=task, kind=f"{path.name.removesuffix('.json')}-corrupt", problem=e.message, repair=f"--fix: {what} (nothing is deleted)"),
                    _fix_corrupt(ctx, task, path, aside, fresh, model), task)


def _fix_corrupt(ctx: _Ctx, task: str, path: Path, aside: Path, fresh: Callable[[], BaseModel] | None, model: type[BaseModel]) -> Callable[[], None]:
    def fix() -> None:
        if _parses(path, model):
            return  # repaired (or rewritten) since we looked
        os.replace(path, aside)
        if fresh is not None:
            write_atomic(path, fresh())
        if path.name != "audit-trail.json" or fresh is not None:
            audit.event(ctx.layout, task, "doctor_moved_corrupt_file", ctx.session, path=str(path), kept_as=str(aside))
    return fix


def _check_owner(ctx: _Ctx, tf: TaskFile) -> None:
    if ctx.session == tf.session_id:
        return
    minutes = _idle_minutes(tf.last_active_at)
    if minutes is not None and minutes >= ctx.layout.config.stale_minutes:
        ctx.add(Finding(where=tf.task_name, kind="lock-idle", broken=False,
                        problem=f"owned by session {tf.session_id}, {idle_for(tf.last_active_at)}",
                        repair=f"spark-git lock break {tf.task_name} --why TEXT  (only if that session is really gone)",
                        details={"owner": tf.session_id, "last_active_at": tf.last_active_at}))


def _idle_minutes(at: str | None) -> float | None:
    import time

    try:
        return (time.time() - parse_time(at).timestamp()) / 60 if at else None
    except ValueError:
        return None


def _check_state_log(ctx: _Ctx, tf: TaskFile) -> None:
    check = getattr(protocol, "consistency_problems", None)
    mismatch = bool(tf.transition_log) and tf.transition_log[-1].to != tf.state
    if callable(check):  # the state machine's own view of what the log cannot explain
        for problem in check(ctx.layout, tf):
            if mismatch and problem.kind == protocol.STATE_LOG_MISMATCH:
                continue  # the plain state/log mismatch: reported below, with its fix
            ctx.add(Finding(where=tf.task_name, kind="state-inconsistent", problem=str(problem),
                            repair=f"inspect {ctx.layout.task_json(tf.task_name)} against `spark-git audit {tf.task_name}`; then fix it by hand or spark-git abandon {tf.task_name} --why TEXT"))
    if tf.transition_log and tf.transition_log[-1].to != tf.state:
        last = tf.transition_log[-1].to
        task = tf.task_name

        def fix() -> None:
            from spark_git.ops.tasks import load_task, save_task

            cur = load_task(ctx.layout, task, check=False)
            if cur.transition_log and cur.transition_log[-1].to != cur.state:
                old = cur.state
                cur.state = cur.transition_log[-1].to  # type: ignore[assignment]
                save_task(ctx.layout, cur)
                audit.event(ctx.layout, task, "doctor_state_repaired", ctx.session, was=old, now=cur.state)

        ctx.add(Finding(where=task, kind="state-vs-log", problem=f"state is {tf.state} but the last transition in transition_log goes to {last}",
                        repair=f"--fix: set state to {last} (the append-only log is the record)"), fix, task)


def _check_worktree(ctx: _Ctx, tf: TaskFile, label: str, path: Path, branch: str) -> None:
    task = tf.task_name
    git = ctx.git
    wt = ctx.registered.get(path.resolve())
    head = ctx.heads.get(branch_ref(branch))
    where = f"{task}/{label}"
    ctx.handled.add(path.resolve())
    if wt is None or wt.prunable or not path.is_dir():
        if path.is_dir() and any(path.iterdir()):
            if (path / ".git").is_file() and wt is None:
                ctx.add(Finding(where=where, kind="worktree-unregistered", problem=f"{path} looks like a worktree but git does not list it",
                                repair=f"--fix: git worktree repair {path}"), lambda: _repair(ctx, path), task)
            else:
                ctx.add(Finding(where=where, kind="worktree-not-a-worktree", problem=f"{path} holds files but is not a worktree",
                                repair=f"move {path} aside (it may hold work), then `spark-git doctor --fix` re-creates the worktree"))
            return
        if head is None:
            ctx.add(Finding(where=where, kind="branch-missing", problem=f"worktree {path} and its branch {branch} are both gone",
                            repair=f"spark-git archive list {task}  (restore the branch with `spark-git archive restore REF --branch {branch}` if it was archived), or spark-git abandon {task} --why TEXT"))
            return
        kind = "worktree-dir-gone" if wt is not None else ("lock-without-worktree" if label == "task" else "branch-without-worktree")
        problem = f"{'registered worktree' if wt is not None else 'worktree'} {path} of branch {branch} is gone"
        ctx.add(Finding(where=where, kind=kind, problem=problem, repair=f"--fix: git worktree prune; git worktree add {path} {branch}  (the branch keeps every commit)"),
                lambda: _readd(ctx, task, wt, path, branch), task)
        return
    wg = Git(path)
    op = _operation(path)
    if op is not None:
        from spark_git.ops.merging.rewrite import MARKER

        by_merge = label != "task" and (ctx.layout.agent_dir(task, label) / MARKER).exists()
        if by_merge or op != "rebase":
            ctx.add(Finding(where=where, kind=f"{op}-in-progress", problem=f"a {op} was left half-done in {path}" + (" by a killed `spark-git merge`" if by_merge else ""),
                            repair=f"--fix: archive the worktree's state and HEAD, then git {op} --abort"),
                    lambda: _abort(ctx, task, label, path, op, branch), task)
        else:
            ctx.add(Finding(where=where, kind="rebase-in-progress", broken=False, problem=f"a rebase is in progress in {path} (e.g. `spark-git sync` left conflicts to resolve)",
                            repair=f"cd {path} && resolve, git add, git rebase --continue  (or git rebase --abort)"))
        return
    if wt.branch == branch:
        return
    dirty = [str(e) for e in wg.status()]
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
            lambda: _switch(ctx, task, label, path, branch), task)


def _admin_dir(worktree: Path) -> Path | None:
    """The worktree's own git dir, read from its `.git` file (no git process: doctor looks at every worktree)."""
    dotgit = worktree / ".git"
    if dotgit.is_dir():
        return dotgit
    try:
        text = dotgit.read_text()
    except OSError:
        return None
    if not text.startswith("gitdir:"):
        return None
    d = Path(text.partition(":")[2].strip())
    return d if d.is_absolute() else (worktree / d).resolve()


def _operation(worktree: Path) -> str | None:
    d = _admin_dir(worktree)
    if d is None:
        return None
    if (d / "rebase-merge").exists() or (d / "rebase-apply").exists():
        return "rebase"
    for name, what in (("MERGE_HEAD", "merge"), ("CHERRY_PICK_HEAD", "cherry-pick"), ("REVERT_HEAD", "revert")):
        if (d / name).exists():
            return what
    return None


def _repair(ctx: _Ctx, path: Path) -> None:
    with mutex(ctx.layout, WORKTREES):
        ctx.git.run("worktree", "repair", str(path))
        if path.resolve() not in {wt.path.resolve() for wt in ctx.git.worktrees()}:
            raise OSError(f"git worktree repair could not re-register {path}: move it aside and run doctor --fix again")


def _readd(ctx: _Ctx, task: str, wt: Worktree | None, path: Path, branch: str) -> None:
    with mutex(ctx.layout, WORKTREES):
        now_wt = {w.path.resolve(): w for w in ctx.git.worktrees()}.get(path.resolve())
        if now_wt is not None and not now_wt.prunable and path.is_dir():
            return  # someone re-created it since we looked
        if wt is not None and wt.detached and wt.head:
            archive.keep(ctx.layout, task, f"detached-{path.parent.name}", wt.head, f"detached HEAD of vanished {path}", ctx.session)
        ctx.git.worktree_prune()
        if path.is_dir():
            path.rmdir()  # empty (checked): git refuses to add into an existing directory otherwise
        path.parent.mkdir(parents=True, exist_ok=True)
        ctx.git.worktree_add(path, branch)


def _abort(ctx: _Ctx, task: str, label: str, path: Path, op: str, branch: str) -> None:
    if _operation(path) != op:
        return  # finished or aborted by its owner (e.g. the merge we waited for) since we looked
    wg = Git(path)
    dirty = [str(e) for e in wg.status()]
    if dirty:
        archive.keep_uncommitted(ctx.layout, task, label, path, dirty, ctx.session)
    head = wg.rev_parse("HEAD")
    if head and not ctx.contained(head, branch_ref(branch)):
        archive.keep(ctx.layout, task, f"{op}-head-{label}", head, f"HEAD of the {op} left in {path}", ctx.session)
    wg.abort_operation(op)
    if label != "task":
        from spark_git.ops.merging.rewrite import MARKER

        (ctx.layout.agent_dir(task, label) / MARKER).unlink(missing_ok=True)
    audit.event(ctx.layout, task, "doctor_aborted", ctx.session, operation=op, worktree=str(path))


def _switch(ctx: _Ctx, task: str, label: str, path: Path, branch: str) -> None:
    wg = Git(path)
    if wg.current_branch() == branch:
        return
    head = wg.rev_parse("HEAD")
    if head and not ctx.contained(head, branch_ref(branch)):
        archive.keep(ctx.layout, task, f"head-{label}", head, f"HEAD of {path} before switching to {branch}", ctx.session)
    wg.run("switch", "--quiet", branch)


def _check_merges(ctx: _Ctx, tf: TaskFile) -> None:
    th = ctx.heads.get(branch_ref(tf.task_branch))
    for a, e in tf.agents.items():
        sha = e.last_merge_sha
        if not sha or th is None:
            continue
        if ctx.git.rev_parse(sha) is None or not ctx.git.is_ancestor(sha, th):
            ctx.add(Finding(where=f"{tf.task_name}/{a}", kind="last-merge-not-in-task-branch",
                            problem=f"last_merge_sha {sha[:12]} of agent {a} is not an ancestor of task branch {tf.task_branch} (the task branch was rewritten)",
                            repair=f"git log --oneline {tf.task_branch}..{sha}  (see what was lost), keep it: git update-ref refs/spark/archive/{tf.task_name}/lost-merge-{a}/{sha[:12]} {sha}; then spark-git merge {tf.task_name} --agent {a}"))


def _check_strays(ctx: _Ctx, tf: TaskFile, expected: set[Path]) -> None:
    """Worktrees under the task dir and agent branches of this task that task.json does not name: left
    by a killed `agent add`. Archived (if they hold anything new) and removed."""
    task = tf.task_name
    root = ctx.layout.task_dir(task).resolve()
    named = {e.branch for e in tf.agents.values()} | {tf.task_branch}
    for p, wt in ctx.registered.items():
        if p in expected or not p.is_relative_to(root):  # registered paths are already resolved
            continue
        ctx.handled.add(p)
        ctx.add(Finding(where=task, kind="stray-worktree", problem=f"worktree {p} ({wt.branch or 'detached'}) is not in task.json (an interrupted `agent add`?)",
                        repair="--fix: archive its uncommitted work and HEAD, then remove it"),
                lambda p=p, wt=wt: _remove_stray(ctx, tf, p, wt), task)
        if wt.branch:
            named.add(wt.branch)  # handled with its worktree
    prefix = ctx.layout.agent_branch(task, "\0").split("\0")[0]
    for ref, sha in ctx.heads.items():
        b = ref.removeprefix("refs/heads/")
        if prefix and b.startswith(prefix) and b not in named:
            ctx.add(Finding(where=task, kind="stray-agent-branch", problem=f"agent branch {b} has no worktree and is not in task.json (an interrupted `agent add`?)",
                            repair=f"--fix: archive {b} if it holds commits the task branch lacks, then delete it"),
                    lambda b=b, sha=sha: _drop_branch(ctx, tf, b, sha), task)


def _named_now(ctx: _Ctx, task: str) -> set[str]:
    """Branches task.json names now (re-read under the task mutex: an `agent add` may have finished)."""
    cur = read_optional(ctx.layout.task_json(task), TaskFile)
    return {e.branch for e in cur.agents.values()} | {cur.task_branch} if cur else set()


def _remove_stray(ctx: _Ctx, tf: TaskFile, p: Path, wt: Worktree) -> None:
    if wt.branch and wt.branch in _named_now(ctx, tf.task_name):
        return
    label = p.parent.name if p.name == "code" else p.name
    if p.is_dir():
        dirty = [str(e) for e in Git(p).status()]
        if dirty:
            archive.keep_uncommitted(ctx.layout, tf.task_name, label, p, dirty, ctx.session)
    if wt.head and not ctx.contained(wt.head, branch_ref(tf.task_branch), tf.base_branch):
        archive.keep(ctx.layout, tf.task_name, wt.branch or f"detached-{label}", wt.head, f"HEAD of stray worktree {p}", ctx.session)
    with mutex(ctx.layout, WORKTREES):
        if p.is_dir():
            ctx.git.run("worktree", "remove", "--force", "--force", str(p))
        ctx.git.worktree_prune()
        if wt.branch and ctx.git.branch_head(wt.branch) == wt.head:
            ctx.git.delete_ref(branch_ref(wt.branch), wt.head, message="spark-git doctor: stray agent branch (archived)")


def _drop_branch(ctx: _Ctx, tf: TaskFile, b: str, sha: str) -> None:
    if b in _named_now(ctx, tf.task_name):
        return
    if not ctx.contained(sha, branch_ref(tf.task_branch), tf.base_branch):
        archive.keep(ctx.layout, tf.task_name, b, sha, f"stray branch {b}", ctx.session)
    with mutex(ctx.layout, WORKTREES):
        ctx.git.delete_ref(branch_ref(b), sha, message="spark-git doctor: stray agent branch")


# -- repo-wide ---------------------------------------------------------------------------------


def _check_main_lock(ctx: _Ctx) -> None:
    try:
        lock = read_optional(ctx.layout.main_lock(), MainLock)
    except CorruptState as e:
        ctx.add(Finding(where="main lock", kind="main-lock-corrupt", problem=e.message, repair="spark-git lock break main --why TEXT"))
        return
    if lock is None or lock.session_id == ctx.session:
        return
    minutes = _idle_minutes(lock.last_active_at)
    if minutes is not None and minutes >= ctx.layout.config.stale_minutes:
        ctx.add(Finding(where="main lock", kind="lock-idle", broken=False, problem=f"held by session {lock.session_id}, {idle_for(lock.last_active_at)}",
                        repair="spark-git lock break main --why TEXT  (only if that session is really gone)"))


def _check_prunable(ctx: _Ctx, only: list[str] | None) -> None:
    """Registered worktrees whose directory is gone, outside any live task's expected paths."""
    for p, wt in ctx.registered.items():
        if not wt.prunable or p.is_dir() or p in ctx.handled:
            continue
        t, _ = ctx.layout.locate(p)
        if only is not None and t not in only:
            continue

        def fix(wt: Worktree = wt, p: Path = p, t: str | None = t) -> None:
            if wt.detached and wt.head and not ctx.contained(wt.head, "HEAD"):
                archive.keep(ctx.layout, t or "repo", f"detached-{p.name}", wt.head, f"detached HEAD of vanished {p}", ctx.session)
            with mutex(ctx.layout, WORKTREES):
                ctx.git.worktree_prune()

        ctx.add(Finding(where=t or "git", kind="worktree-dir-gone", problem=f"git lists worktree {p} but its directory is gone",
                        repair="--fix: git worktree prune (a detached HEAD is archived first)"), fix)


LOCK_GLOBS = ("*.lock", "refs/**/*.lock", "worktrees/*/*.lock", "logs/**/*.lock")


def _check_git_locks(ctx: _Ctx, only: list[str] | None) -> None:
    common = ctx.layout.repo.common_dir
    found = sorted({p for g in LOCK_GLOBS for p in common.glob(g) if p.is_file() and not within(p, ctx.layout.spark_dir)})
    if not found:
        return
    running = _git_processes(ctx.layout)
    for p in found:
        rel = p.relative_to(common)
        where = _lock_owner(ctx, common, rel) or "git"
        if only is not None and where != "git" and where.split("/")[0] not in only:
            continue
        if running:
            ctx.add(Finding(where=where, kind="git-lock-busy", broken=False, problem=f"{rel} exists while git process(es) {', '.join(map(str, running))} run in this repo",
                            repair="wait for them; run doctor again"))
            continue
        ctx.add(Finding(where=where, kind="git-lock-stale", problem=f"stale {rel} left by a killed git process (no git process runs in this repo)",
                        repair=f"--fix: rm {p}"), lambda p=p: _unlink_stale(ctx, p))


def _lock_owner(ctx: _Ctx, common: Path, rel: Path) -> str | None:
    """The task whose worktree a `worktrees/<name>/*.lock` belongs to (None: repo-wide lock)."""
    if rel.parts[0] != "worktrees" or len(rel.parts) < 3:
        return None
    try:
        wt = Path((common / "worktrees" / rel.parts[1] / "gitdir").read_text().strip()).parent
    except OSError:
        return None
    task, agent = ctx.layout.locate(wt)
    return f"{task}/{agent or 'task'}" if task else None


def _unlink_stale(ctx: _Ctx, p: Path) -> None:
    if _git_processes(ctx.layout):
        raise OSError(f"a git process started in this repo; {p} was left alone")
    p.unlink(missing_ok=True)


def _git_processes(layout: Layout) -> list[int]:
    """Pids of git processes whose cwd is in the repo, its git dir or the tasks root (Linux /proc)."""
    roots = [layout.main_worktree, layout.repo.common_dir, layout.tasks_root]
    pids = []
    me = os.getpid()
    for d in Path("/proc").iterdir() if Path("/proc").is_dir() else []:
        if not d.name.isdigit() or int(d.name) == me:
            continue
        try:
            comm = (d / "comm").read_text().strip()
            if comm != "git" and not comm.startswith("git-"):
                continue
            cwd = Path(os.readlink(d / "cwd"))
        except OSError:
            continue
        if any(within(cwd, r) for r in roots):
            pids.append(int(d.name))
    return pids


# -- lock break ------------------------------------------------------------------------------------


class LockBreakData(BaseModel):
    task: str
    previous_owner: str | None
    new_owner: str | None
    idle: str | None
    why: str
    rebuilt: bool = False  # task.json was missing or corrupt and was rebuilt from git + audit trail
    corrupt_kept_as: str | None = None
    noted_on: str | None = None  # commit the git note was added to (None: audit trail only)


def break_lock(layout: Layout, task: str, *, why: str, session: str | None) -> LockBreakData:
    """A human's explicit takeover of a task lock: the owner becomes `session`; logged (audit + note)."""
    from spark_git.core.errors import BadInput
    from spark_git.ops import mainlock

    if not why or not why.strip():
        raise BadInput("--why is required: breaking a lock is logged with the reason")
    if task == "main":
        before = mainlock.read(layout) if layout.main_lock().exists() and _parses(layout.main_lock(), MainLock) else None
        if layout.main_lock().exists() and before is None:  # corrupt: keep it beside
            aside = layout.main_lock().with_name(f"task.json.corrupt-{now().replace(':', '')}")
            os.replace(layout.main_lock(), aside)
            audit.event(layout, "main", "main_lock_broken", session, why=why, corrupt_kept_as=str(aside))
            return LockBreakData(task="main", previous_owner=None, new_owner=None, idle=None, why=why, corrupt_kept_as=str(aside))
        mainlock.unlock(layout, session, force=True, why=why)
        return LockBreakData(task="main", previous_owner=before.session_id if before else None, new_owner=None,
                             idle=idle_for(before.last_active_at) if before else None, why=why)
    task = task_name(task)
    if session is None:
        raise BadInput("give the new owner: --session ID (or SPARK_SESSION_ID)", hint="lock break hands the task to your session")
    from spark_git.ops.tasks import save_task
    from spark_git.state.files import create_exclusive

    git = layout.git()
    aside: Path | None = None
    with mutex(layout, task_mutex_name(task)):
        path = layout.task_json(task)
        try:
            tf = read_optional(path, TaskFile)
        except CorruptState:
            aside = path.with_name(f"task.json.corrupt-{now().replace(':', '')}")
            tf = None
        if tf is not None:
            prev, idle = tf.session_id, idle_for(tf.last_active_at)
            tf.session_id = session
            save_task(layout, tf)
            rebuilt = False
        else:
            tf = _rebuild(layout, git, task, session)
            if aside is not None:
                os.replace(path, aside)
            if not create_exclusive(path, tf):
                raise BadInput(f"{path} appeared while rebuilding it; run lock break again")
            prev, idle, rebuilt = None, None, True
        head = git.branch_head(tf.task_branch)
    audit.event(layout, task, "lock_broken", session, previous_owner=prev, new_owner=session, idle=idle, why=why, rebuilt=rebuilt,
                corrupt_kept_as=str(aside) if aside else None)
    noted = None
    if head is not None:
        from spark_git.state import notes

        notes.append(layout, head, {"kind": "lock_break", "task": task, "previous_owner": prev, "new_owner": session, "why": why})
        noted = head
    return LockBreakData(task=task, previous_owner=prev, new_owner=session, idle=idle, why=why, rebuilt=rebuilt,
                         corrupt_kept_as=str(aside) if aside else None, noted_on=noted)


def _parses(path: Path, model: type[BaseModel]) -> bool:
    try:
        read_optional(path, model)
        return True
    except CorruptState:
        return False


def _rebuild(layout: Layout, git: Git, task: str, session: str) -> TaskFile:
    """A lock for a task whose task.json is gone or corrupt, from git (branches, worktrees) and the audit trail."""
    from spark_git.core.errors import BadInput
    from spark_git.ops.tasks import role_of
    from spark_git.state.models import AgentEntry, Transition

    branch = layout.task_branch(task)
    head = git.branch_head(branch)
    if head is None:
        raise BadInput(f"task {task!r} has no branch {branch}: nothing to adopt", hint=f"see `spark-git archive list {task}`")
    base = layout.base_branch()
    base_commit = git.out("merge-base", head, base) if git.branch_head(base) else head
    log: list[Transition] = []
    try:
        trail = audit.load(layout, task)
    except CorruptState:
        trail = None
    for t in (trail.state_transitions if trail else []):
        try:
            log.append(Transition.model_validate(t))
        except ValueError:
            continue
    state = log[-1].to if log else "INIT"
    agents = {}
    adir = layout.task_dir(task) / "agents"
    for d in sorted(adir.iterdir()) if adir.is_dir() else []:
        b = layout.agent_branch(task, d.name)
        if git.branch_head(b) is not None:
            agents[d.name] = AgentEntry(name=d.name, branch=b, worktree=str(layout.agent_worktree(task, d.name)), role=role_of(layout, d.name))
    from typing import get_args

    from spark_git.state.models import State

    return TaskFile(task_name=task, session_id=session, state=state if state in get_args(State) else "INIT",  # type: ignore[arg-type]
                    base_branch=base, base_commit=base_commit, task_branch=branch, worktree=str(layout.task_worktree(task)),
                    provisioning="done", agents=agents, transition_log=log)
