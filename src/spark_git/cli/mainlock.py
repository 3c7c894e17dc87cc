"""`spark-git lock main` / `spark-git unlock main`."""

from __future__ import annotations

from typing import Annotated

import typer

from spark_git.cli.common import Result, SessionOpt, execute
from spark_git.cli.root import app
from spark_git.core.errors import BadInput
from spark_git.core.layout import Layout
from spark_git.ops import mainlock
from spark_git.state.locks import mint_session, session_from

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
        minted = s is None
        s = s or mint_session()
        d = mainlock.lock(layout, s, reason)
        nxt = [f"export SPARK_SESSION_ID={s}"] if minted else []
        return Result(f"main worktree locked by session {s}", d, next=[*nxt, "spark-git unlock main"])

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
        d = mainlock.unlock(layout, session_from(session), force=force, why=why)
        if not d.released:
            return Result("main worktree was not locked", d)
        return Result(f"main worktree unlocked (was held by {d.previous_owner or 'an unreadable lock'})" + (" — forced, logged" if force else ""), d)

    execute(ctx, action)


@lock_app.command("break")
def lock_break(
    ctx: typer.Context,
    task: Annotated[str, typer.Argument(help="Task name, or `main` for the main-worktree lock.")],
    why: Annotated[str, typer.Option("--why", help="Why the owner's lock is broken; recorded in the audit trail and a git note.")],
    session: SessionOpt = None,
) -> None:
    """A human takes over a task lock (the task becomes your session's); a missing or corrupt task.json is rebuilt from git and the audit trail. Logged."""
    from spark_git.ops import doctor

    def action(layout: Layout) -> Result:
        d = doctor.break_lock(layout, task, why=why, session=session_from(session))
        if d.task == "main":
            return Result(f"main-worktree lock broken (was {d.previous_owner or 'corrupt or free'}); logged", d)
        how = "rebuilt from git and the audit trail" if d.rebuilt else f"taken from {d.previous_owner} ({d.idle})"
        logged = "logged in the audit trail" + (f" and as a note on {d.noted_on[:12]}" if d.noted_on else "")
        return Result(f"task {d.task} now owned by {d.new_owner}: lock {how}; {logged}", d, task=d.task,
                      next=[f"spark-git status {d.task}", f"spark-git doctor {d.task}"])

    execute(ctx, action)
