"""`spark-git lock main` / `spark-git unlock main`."""

from __future__ import annotations

from typing import Annotated

import typer

from spark_git.cli.common import Result, SessionOpt, execute
from spark_git.cli.root import app
from spark_git.core.errors import BadInput
from spark_git.core.layout import Layout
from spark_git.ops.ending import doctor
from spark_git.ops.ending.doctor import LockBreakData
from spark_git.ops.shared import mainlock
from spark_git.state.backends import open_store
from spark_git.state.locks import session_from

lock_app = typer.Typer(help="Take locks: the main-worktree lock; break a task lock (humans, logged).", no_args_is_help=True)
unlock_app = typer.Typer(help="Release locks: the main-worktree lock.", no_args_is_help=True)
app.add_typer(lock_app, name="lock")
app.add_typer(unlock_app, name="unlock")


@lock_app.command("main")
def lock_main(
    ctx: typer.Context,
    session: SessionOpt = None,
    reason: Annotated[str | None, typer.Option("--reason", help="Why you operate on main directly.")] = None,
) -> None:
    """Take the main-worktree lock for this session (idempotent for the owner)."""

    def action(layout: Layout) -> Result:
        s = session_from(session)
        d = mainlock.lock(open_store(layout), s, reason)
        return Result(f"main worktree locked by session {s}", d, next=["spark-git unlock main"])

    execute(ctx, action)


@unlock_app.command("main")
def unlock_main(
    ctx: typer.Context,
    session: SessionOpt = None,
    force: Annotated[bool, typer.Option("--force", help="Break another session's lock (needs --why; logged).")] = False,
    why: Annotated[str | None, typer.Option("--why", help="Reason for --force, recorded.")] = None,
) -> None:
    """Release the main-worktree lock (owner only, or a human with --force --why)."""

    def action(layout: Layout) -> Result:
        if why and not force:
            raise BadInput("--why goes with --force")
        d = mainlock.unlock(open_store(layout), session_from(session), force=force, why=why)
        if not d.released:
            return Result("main worktree was not locked", d)
        return Result(f"main worktree unlocked (was held by {d.previous_owner or 'an unreadable lock'})" + (" — forced, logged" if force else ""), d)

    execute(ctx, action)


@lock_app.command("break")
def lock_break(
    ctx: typer.Context,
    task: Annotated[str, typer.Argument(help="Task name, or `main` for the main-worktree lock.")],
    why: Annotated[str, typer.Option("--why", help="Why the owner's lock is broken; recorded in the audit trail and a git note.")],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Say whose lock would be broken, what would be rebuilt or moved aside; change nothing.")] = False,
    session: SessionOpt = None,
) -> None:
    """A human takes over a task lock (the task becomes your session's); a missing or corrupt task.json is rebuilt from git and the audit trail. Logged."""
    import shlex

    def action(layout: Layout) -> Result:
        d = doctor.break_lock(layout, task, why=why, session=session_from(session), dry_run=dry_run)
        if d.dry_run:
            return _would_break(d, f"spark-git lock break {task} --why {shlex.quote(why)}" + (f" --session {shlex.quote(session)}" if session else ""))
        if d.task == "main":
            return Result(f"main-worktree lock broken (was {d.previous_owner or 'corrupt or free'}); logged", d)
        how = "rebuilt from git and the audit trail" if d.rebuilt else f"taken from {d.previous_owner} ({d.idle})"
        logged = "logged in the audit trail" + (f" and as a note on {d.noted_on[:12]}" if d.noted_on else "")
        return Result(f"task {d.task} now owned by {d.new_owner}: lock {how}; {logged}", d, task=d.task,
                      next=[f"spark-git status {d.task}", f"spark-git doctor {d.task}"])

    execute(ctx, action)


def _would_break(d: LockBreakData, again: str) -> Result:
    if d.task == "main" and not (d.previous_owner or d.corrupt_kept_as):
        what = "the main-worktree lock is free: nothing to break"
    elif d.task == "main":
        what = f"the main-worktree lock ({d.previous_owner or 'corrupt'}) would be removed"
    elif d.rebuilt:
        what = f"task {d.task}'s task.json would be rebuilt from git and the audit trail, owned by {d.new_owner}"
    else:
        what = f"task {d.task} would pass from {d.previous_owner} ({d.idle}) to {d.new_owner}"
    if d.corrupt_kept_as:
        what += f"; the corrupt lock would be kept as {d.corrupt_kept_as}"
    logged = "; logged in the audit trail" + (f" and as a note on {d.noted_on[:12]}" if d.noted_on else "")
    alive = "; a process of the owner is working on it now" if d.owner_alive else ""
    return Result(f"dry run, nothing changed: {what}{logged}{alive}", d, task=None if d.task == "main" else d.task, next=[again])
