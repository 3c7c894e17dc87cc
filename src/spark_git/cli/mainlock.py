"""`spark-git lock main` / `spark-git unlock main`."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from .. import mainlock
from ..errors import BadInput
from ..locks import mint_session, session_from
from . import app
from .common import Result, SessionOpt, execute

lock_app = typer.Typer(help="Take locks: the main-worktree lock.", no_args_is_help=True)
unlock_app = typer.Typer(help="Release locks: the main-worktree lock.", no_args_is_help=True)
app.add_typer(lock_app, name="lock")
app.add_typer(unlock_app, name="unlock")


@lock_app.command("main")
def lock_main(
    ctx: typer.Context,
    session: SessionOpt = None,
    reason: Annotated[Optional[str], typer.Option("--reason", help="Why you operate on main directly.")] = None,
) -> None:
    """Take the main-worktree lock for this session (idempotent for the owner)."""

    def action(layout):
        s = session_from(session)
        minted = s is None
        s = s or mint_session()
        d = mainlock.lock(layout, s, reason)
        nxt = [f"export SPARK_SESSION_ID={s}"] if minted else []
        return Result(f"main worktree locked by session {s}", d, next=nxt + ["spark-git unlock main"])

    execute(ctx, action)


@unlock_app.command("main")
def unlock_main(
    ctx: typer.Context,
    session: SessionOpt = None,
    force: Annotated[bool, typer.Option("--force", help="Break another session's lock (needs --why; logged).")] = False,
    why: Annotated[Optional[str], typer.Option("--why", help="Reason for --force, recorded.")] = None,
) -> None:
    """Release the main-worktree lock (owner only, or a human with --force --why)."""

    def action(layout):
        if why and not force:
            raise BadInput("--why goes with --force")
        d = mainlock.unlock(layout, session_from(session), force=force, why=why)
        if not d.released:
            return Result("main worktree was not locked", d)
        return Result(f"main worktree unlocked (was held by {d.previous_owner or 'an unreadable lock'})" + (" — forced, logged" if force else ""), d)

    execute(ctx, action)
