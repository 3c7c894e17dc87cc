"""A task worktree left changed by a merge killed during its fast-forward (files updated, branch not
moved): they block every later merge ("the task worktree is not clean"). `merge` leaves a marker
in the task dir while it fast-forwards, so doctor looks (one `git status`) only where one is left.
--fix archives the changes first (refs/spark/archive/<task>/uncommitted-task/...), then resets the
worktree to its branch: nothing is lost, and the next merge runs."""

from __future__ import annotations

from functools import partial
from pathlib import Path

from spark_git.core.errors import CorruptState
from spark_git.core.git import Git
from spark_git.ops.ending.doctor import fixes
from spark_git.ops.ending.doctor.checks import ENDED
from spark_git.ops.ending.doctor.scan import Ctx, Finding
from spark_git.ops.shared import archive
from spark_git.ops.shared.merging.record import ff_marker
from spark_git.state.models import TaskFile


def check_task_worktrees(ctx: Ctx, tfs: dict[str, TaskFile | CorruptState | None]) -> None:
    """Runs after the git lock checks, so that their fixes (a stale index.lock) come first."""
    for task, tf in tfs.items():
        if not isinstance(tf, TaskFile) or tf.state in ENDED or tf.provisioning != "done":
            continue
        p, marker = ctx.layout.task_worktree(task), ff_marker(ctx.layout, task)
        if not marker.exists():
            continue
        if p.resolve() not in ctx.registered or not p.is_dir() or fixes.operation(p) is not None:
            continue  # a merge/rebase in progress there has its own finding and fix (checks.py)
        dirty = [str(e) for e in Git(p).status()]
        if not dirty:
            ctx.add(Finding(where=f"{task}/task", kind="merge-ff-marker", broken=False, problem=f"{marker} was left by a killed merge; the task worktree is clean",
                            repair=f"--fix: rm {marker}"), partial(marker.unlink, missing_ok=True), task=task)
        else:
            ctx.add(Finding(where=f"{task}/task", kind="task-worktree-changed",
                            problem=f"the task worktree {p} has {len(dirty)} change(s) no commit holds (an interrupted merge or checkout): {', '.join(dirty[:5])}",
                            repair=f"--fix: archive them (refs/spark/archive/{task}/uncommitted-task/...), then git reset --hard + git clean in {p}",
                            details={"files": dirty}), partial(_reset, ctx, task, p), task=task)


def _reset(ctx: Ctx, task: str, p: Path) -> None:
    marker = ff_marker(ctx.layout, task)
    wt = Git(p)
    # Again, under the task mutex: the merge that left the marker may have been alive and finished since.
    dirty = [str(e) for e in wt.status()] if marker.exists() else []
    if dirty:
        archive.keep_uncommitted(ctx.store, task, "task", p, dirty, ctx.session)
        wt.run("reset", "--hard", "--quiet", "HEAD")
        wt.run("clean", "-fd", "--quiet")  # untracked, not ignored: they are on the archive ref now
    marker.unlink(missing_ok=True)
