"""`spark-git doctor [<task>] [--fix]`: finds what crashes leave behind and says how to repair each.

Detection reads only, and reads each thing once: the worktree list, the branch heads and every
task.json are read and indexed up front (scan.py), so the per-task checks (checks.py) are lookups and
doctor's time grows linearly with the number of tasks. `--fix` repairs what needs no judgement and
loses nothing (fixes.py): whatever could drop a commit or a file is archived first
(refs/spark/archive/...), corrupt files are moved aside, never deleted. What needs a human (another
session's lock, a worktree without a lock, a rewritten task branch) is only reported, with the
command. spark-git's own mutex files are never touched. `lock break` lives in lockbreak.py.
"""

from __future__ import annotations

from collections.abc import Iterable

from spark_git.core.errors import BadInput, CorruptState, SparkError
from spark_git.core.git import branch_ref
from spark_git.core.layout import Layout, task_name
from spark_git.ops.ending.doctor import checks, halfway, landings, machines, queue, records, repo
from spark_git.ops.ending.doctor.lockbreak import LockBreakData, break_lock
from spark_git.ops.ending.doctor.scan import Ctx, DoctorData, Finding, load_task
from spark_git.ops.shared.worktrees import Progress, quiet
from spark_git.state.backends import open_store
from spark_git.state.locks import mutex, task_mutex_name
from spark_git.state.models import TaskFile
from spark_git.state.store import Store

__all__ = ["DoctorData", "Finding", "LockBreakData", "break_lock", "run"]


def run(layout: Layout, only: str | None = None, *, fix: bool = False, session: str | None = None, dry_run: bool = False,
        progress: Progress = quiet) -> DoctorData:
    """`dry_run`: every finding, with what --fix would do to it (`fixable`), and nothing acted on."""
    if only is not None:
        task_name(only)
        if not layout.task_dir(only).is_dir():
            raise BadInput(f"no task {only!r}: {layout.task_dir(only)} does not exist", hint="`spark-git status` lists the tasks", next=["spark-git status"], task=only)
    ctx, seen = observe(layout, open_store(layout), only, session=session, progress=progress)
    checked = len(seen)
    if fix and not dry_run:
        apply(ctx, seen, progress)
    found = [f for f, _, _ in ctx.findings]
    return DoctorData(
        tasks_checked=checked, findings=found,
        broken=sum(1 for f in found if f.broken and not f.fixed), fixed=sum(1 for f in found if f.fixed), dry_run=dry_run,
    )


def observe(layout: Layout, store: Store, only: str | None, *, session: str | None, progress: Progress = quiet) -> tuple[Ctx, dict[str, bytes | None]]:
    """Every finding, and the bytes of each task.json as they were when doctor looked (apply() fixes
    a task only while its task.json still holds them)."""
    progress("reading worktrees and branches")
    ctx = Ctx.scan(layout, store, session)
    names = [only] if only else layout.task_names()
    seen = {name: _task_bytes(layout, name) for name in names}  # before reading: a change after is caught
    tfs = {name: load_task(store, name) for name in names}
    ctx.index_merges(_recorded_merges(ctx, tfs.values()))
    for i, name in enumerate(names, 1):
        progress(f"[{i}/{len(names)}] checking task {name}")
        checks.check_task(ctx, name, tfs[name])
        records.check_archives(ctx, name)
        records.check_reports(ctx, name, tfs[name])
        tf = tfs[name]
        if isinstance(tf, TaskFile) and tf.state not in checks.ENDED and tf.provisioning == "done":
            records.check_approval(ctx, tf)
    progress("checking the main lock, prunable worktrees, git's lock files and the queue")
    repo.check_main_lock(ctx)
    repo.check_tasks_elsewhere(ctx)
    repo.check_prunable(ctx, names if only else None)
    repo.check_interrupted_adds(ctx, names if only else None)
    repo.check_git_locks(ctx, names if only else None)
    if only is None:
        queue.check_queue(ctx)
        landings.check_base(ctx)
        if layout.config.sync.remote:
            machines.check_machines(ctx)
    halfway.check_task_worktrees(ctx, tfs)
    return ctx, seen


def _task_bytes(layout: Layout, task: str) -> bytes | None:
    try:
        return layout.task_json(task).read_bytes()
    except OSError:
        return None


def _recorded_merges(ctx: Ctx, tfs: Iterable[TaskFile | CorruptState | None]) -> list[tuple[str, str, str]]:
    """(last_merge_sha, task head, base commit) of every agent whose merges checks.check_merges looks at."""
    out = []
    for tf in tfs:
        if not isinstance(tf, TaskFile) or tf.state in checks.ENDED or tf.provisioning != "done":
            continue
        th = ctx.heads.get(branch_ref(tf.task_branch))
        out += [(e.last_merge_sha, th, tf.base_commit) for e in tf.agents.values() if e.last_merge_sha and th]
    return out


FIRST = ("git-lock-stale",)  # a stale index.lock makes every later git fix in that worktree fail


def apply(ctx: Ctx, seen: dict[str, bytes | None], progress: Progress = quiet) -> None:
    """Runs each fix; a task's fixes under its mutex, and only if its task.json is still what doctor
    saw (a `cleanup` or a merge in between makes the observation stale: reported, not acted on)."""
    for f, fn, task in sorted(ctx.findings, key=lambda x: x[0].kind not in FIRST):
        if fn is None:
            continue
        progress(f"fixing {f.where}: {f.kind}")
        try:
            if task is not None:
                with mutex(ctx.layout, task_mutex_name(task)):
                    now = _task_bytes(ctx.layout, task)
                    if task in seen and now != seen[task]:
                        f.error = f"task {task} changed since doctor looked (its task.json was rewritten or removed): not fixed; run doctor again"
                        continue
                    fn()
                    seen[task] = _task_bytes(ctx.layout, task)  # this fix's own write is not a change by someone else
            else:
                fn()
            f.fixed = True
        except (SparkError, OSError) as e:
            f.error = getattr(e, "message", None) or str(e)
