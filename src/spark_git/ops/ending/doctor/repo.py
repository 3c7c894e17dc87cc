"""Doctor's repo-wide checks: the main-worktree lock, registered worktrees whose directory is gone or
whose `git worktree add` was killed half-way, and git lock files left by killed git processes."""

from __future__ import annotations

import os
from contextlib import nullcontext
from functools import partial
from pathlib import Path

from spark_git.core.errors import Blocked, CorruptState
from spark_git.core.git import ZERO_SHA, Worktree
from spark_git.core.layout import Layout, within
from spark_git.ops.ending.doctor.scan import Ctx, Finding, idle_minutes
from spark_git.ops.queue.land import LANDING_REASON
from spark_git.ops.shared import archive
from spark_git.ops.shared.taskfile import start_mutex_name
from spark_git.state.files import read_optional
from spark_git.state.locks import MAIN, WORKTREES, idle_for, mutex
from spark_git.state.models import MainLock


def check_main_lock(ctx: Ctx) -> None:
    try:
        lock = read_optional(ctx.layout.main_lock(), MainLock)
    except CorruptState as e:
        ctx.add(Finding(where="main lock", kind="main-lock-corrupt", problem=e.message, repair="spark-git lock break main --why TEXT"))
        return
    if lock is None:
        return
    if _dead_complete(ctx, lock):
        ctx.add(Finding(where="main lock", kind="main-lock-dead-owner",
                        problem=f"held by session {lock.session_id} for {lock.reason!r}, but that process (pid {lock.pid}) is gone: every other `complete` is refused",
                        repair="--fix: release it (the killed complete landed nothing, or everything: `spark-git status` shows which)"),
                partial(_release_dead, ctx, lock))
        return
    if lock.session_id == ctx.session:
        return
    minutes = idle_minutes(lock.last_active_at)
    if minutes is not None and minutes >= ctx.layout.config.stale_minutes:
        ctx.add(Finding(where="main lock", kind="lock-idle", broken=False, problem=f"held by session {lock.session_id}, {idle_for(lock.last_active_at)}",
                        repair="spark-git lock break main --why TEXT  (only if that session is really gone)"))


def check_tasks_elsewhere(ctx: Ctx) -> None:
    elsewhere = ctx.layout.tasks_elsewhere()
    if elsewhere:
        root, names = elsewhere
        ctx.add(Finding(where="tasks_root", kind="tasks-elsewhere",
                        problem=f"{len(names)} task(s) under {root}, not under the configured tasks_root {ctx.layout.tasks_root}: {', '.join(names)}",
                        repair=f"set tasks_root back to {root} (or remove the tasks_root line) to manage them"))


COMPLETE_REASONS = ("spark-git complete ", LANDING_REASON)  # mainlock.hold's reasons while `complete` lands


def _dead_complete(ctx: Ctx, lock: MainLock) -> bool:
    """A `complete` holds the main mutex for as long as its lock exists (mainlock.hold): a lock of a
    complete whose mutex is free is a killed run's. A lock taken by hand (`lock main`) is never stale."""
    if not (lock.reason or "").startswith(COMPLETE_REASONS):
        return False
    try:
        with mutex(ctx.layout, MAIN, timeout=0.2):
            return True
    except Blocked:
        return False  # a complete is running


def _release_dead(ctx: Ctx, seen: MainLock) -> None:
    with mutex(ctx.layout, MAIN, timeout=5):  # re-checked under the mutex: a new complete may have taken it
        cur = read_optional(ctx.layout.main_lock(), MainLock)
        if cur is None:
            return
        if (cur.session_id, cur.created_at, cur.pid) != (seen.session_id, seen.created_at, seen.pid):
            raise OSError("the main lock changed since doctor looked; left alone")
        ctx.store.release_main_lock()
        ctx.store.event("main", "main_lock_released", ctx.session, why="doctor --fix: its complete was killed",
                                     holder=seen.session_id, reason=seen.reason, pid=seen.pid)


def check_prunable(ctx: Ctx, only: list[str] | None) -> None:
    """Registered worktrees whose directory is gone, outside any live task's expected paths."""
    for p, wt in ctx.registered.items():
        if not wt.prunable or p.is_dir() or p in ctx.handled:
            continue
        t, _ = ctx.layout.locate(p)
        if only is not None and t not in only:
            continue

        def fix(wt: Worktree = wt, p: Path = p, t: str | None = t) -> None:
            if wt.detached and wt.head and not ctx.contained(wt.head, "HEAD"):
                archive.keep(ctx.store, t or "repo", f"detached-{p.name}", wt.head, f"detached HEAD of vanished {p}", ctx.session)
            with mutex(ctx.layout, WORKTREES):
                ctx.git.worktree_prune()

        ctx.add(Finding(where=t or "git", kind="worktree-dir-gone", problem=f"git lists worktree {p} but its directory is gone",
                        repair="--fix: git worktree prune (a detached HEAD is archived first)"), fix)


def check_interrupted_adds(ctx: Ctx, only: list[str] | None) -> None:
    """A `git worktree add` killed before it wrote HEAD leaves an admin entry whose HEAD is the null
    id, locked "initializing" (git's own marker): git then fails every walk of all refs (`rev-list
    --all`, `gc`, `fsck`: "bad object worktrees/X/HEAD"). It holds no commit and no file."""
    for p, wt in ctx.registered.items():
        if not (wt.head == ZERO_SHA and wt.locked and "initializing" in wt.extra.get("locked", "")):
            continue
        t, _ = ctx.layout.locate(p)
        if only is not None and t not in only:
            continue
        ctx.add(Finding(where=t or "git", kind="worktree-add-interrupted", problem=f"a killed `git worktree add` left {p} registered with no HEAD "
                        "(git fails `rev-list --all`, `gc` and `fsck` on it)", repair=f"--fix: git worktree remove --force --force {p}"),
                partial(_remove_half_added, ctx, p, t))


def _remove_half_added(ctx: Ctx, path: Path, task: str | None) -> None:
    # A `start` still running holds its mutex and is about to write HEAD: wait for it, then look again.
    with (mutex(ctx.layout, start_mutex_name(task)) if task else nullcontext()), mutex(ctx.layout, WORKTREES):
        wt = next((w for w in ctx.git.worktrees() if w.path.resolve() == path.resolve()), None)
        if wt is not None and wt.head == ZERO_SHA:
            ctx.git.run("worktree", "remove", "--force", "--force", str(path))


LOCK_GLOBS = ("*.lock", "refs/**/*.lock", "worktrees/*/*.lock", "logs/**/*.lock")


def check_git_locks(ctx: Ctx, only: list[str] | None) -> None:
    common = ctx.layout.repo.common_dir
    found = sorted({p for g in LOCK_GLOBS for p in common.glob(g) if p.is_file() and not within(p, ctx.layout.spark_dir)})
    if not found:
        return
    running = _git_processes(ctx.layout)
    for p in found:
        if running is None:  # no /proc: a live git may hold it; report, never delete
            ctx.add(Finding(where=_lock_owner(ctx, common, p.relative_to(common)) or "git", kind="git-lock-unknown",
                            problem=f"{p.relative_to(common)} exists and this system cannot tell whether a git process holds it (no /proc)",
                            repair=f"make sure no git command runs in this repo, then: rm {p}"))
            continue
        rel = p.relative_to(common)
        where = _lock_owner(ctx, common, rel) or "git"
        if only is not None and where != "git" and where.split("/")[0] not in only:
            continue
        if running:
            ctx.add(Finding(where=where, kind="git-lock-busy", broken=False, problem=f"{rel} exists while git process(es) {', '.join(map(str, running))} run in this repo",
                            repair="wait for them; run doctor again"))
            continue
        ctx.add(Finding(where=where, kind="git-lock-stale", problem=f"stale {rel} left by a killed git process (no git process runs in this repo)",
                        repair=f"--fix: rm {p}"), partial(_unlink_stale, ctx, p))


def _lock_owner(ctx: Ctx, common: Path, rel: Path) -> str | None:
    """The task whose worktree a `worktrees/<name>/*.lock` belongs to (None: repo-wide lock)."""
    if rel.parts[0] != "worktrees" or len(rel.parts) < 3:
        return None
    try:
        wt = Path((common / "worktrees" / rel.parts[1] / "gitdir").read_text().strip()).parent
    except OSError:
        return None
    task, agent = ctx.layout.locate(wt)
    return f"{task}/{agent or 'task'}" if task else None


def _unlink_stale(ctx: Ctx, p: Path) -> None:
    if _git_processes(ctx.layout) != []:
        raise OSError(f"a git process started in this repo; {p} was left alone")
    p.unlink(missing_ok=True)


PROC = Path("/proc")


def _git_processes(layout: Layout) -> list[int] | None:
    """Pids of git processes whose cwd is in the repo, its git dir or the tasks root (Linux /proc);
    None when there is no /proc to tell."""
    if not PROC.is_dir():
        return None
    roots = [layout.main_worktree, layout.repo.common_dir, layout.tasks_root]
    pids = []
    me = os.getpid()
    for d in PROC.iterdir():
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
