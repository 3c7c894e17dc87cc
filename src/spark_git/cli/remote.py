"""`spark-git remote enable|disable|status|check|sync` and `spark-git heartbeat`."""

from __future__ import annotations

from typing import Annotated

import typer

from spark_git.cli.common import Result, execute
from spark_git.cli.root import app
from spark_git.core.layout import Layout, task_name
from spark_git.ops import remote

remote_app = typer.Typer(help="Remote mode: task locks, state, queue and notes on a shared git remote.", no_args_is_help=True)
app.add_typer(remote_app, name="remote")


@remote_app.command("enable")
def enable(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The git remote every machine shares (e.g. origin).")],
    machine: Annotated[str | None, typer.Option("--machine", help="This machine's name in leases (default: the host name).")] = None,
) -> None:
    """Switch this clone to remote mode (checks the remote answers first)."""

    def action(layout: Layout) -> Result:
        d = remote.enable(layout, name, machine)
        return Result(f"remote mode on: locks and state on {d.remote} ({d.url}), this machine is {d.machine!r}", d,
                      next=["spark-git remote status"])

    execute(ctx, action)


@remote_app.command("disable")
def disable(ctx: typer.Context) -> None:
    """Switch this clone back to local mode."""

    def action(layout: Layout) -> Result:
        return Result("remote mode off: locks and state on this machine", remote.disable(layout))

    execute(ctx, action)


@remote_app.command("status")
def status(ctx: typer.Context) -> None:
    """Every task locked on the remote, by any machine: holder, lease age, stale leases."""

    def action(layout: Layout) -> Result:
        d = remote.status(layout)
        stale = [t.task for t in d.tasks if t.stale]
        lines = [f"{t.task}: {t.state} held by {t.machine} (session {t.session}, pid {t.pid}), lease renewed {t.lease_age_s:.0f}s ago"
                 + (" — STALE" if t.stale else "") for t in d.tasks]
        summary = f"remote {d.remote}: {len(d.tasks)} task(s), {len(stale)} stale; this machine is {d.machine!r}"
        nxt = [f"spark-git lock break {t} --why REASON" for t in stale]
        return Result("\n".join([summary, *lines]), d, next=nxt)

    execute(ctx, action)


@remote_app.command("check")
def check(
    ctx: typer.Context,
    name: Annotated[str | None, typer.Argument(help="The remote to check (default: the configured one, else origin).")] = None,
) -> None:
    """Check the host: refs/spark/* and refs/notes/* pushed and fetched, --atomic honoured."""

    def action(layout: Layout) -> Result:
        d = remote.check(layout, name)
        ok = d.custom_refs and d.notes_refs and d.atomic
        return Result(f"{d.remote} ({d.url}): custom refs {d.custom_refs}, notes refs {d.notes_refs}, atomic {d.atomic}", d,
                      status="OK" if ok else "FAIL", exit_code=0 if ok else 1)

    execute(ctx, action)


@remote_app.command("sync")
def sync(ctx: typer.Context) -> None:
    """Merge and push the notes (attribution, evidence, verdicts) now."""

    def action(layout: Layout) -> Result:
        d = remote.sync(layout)
        return Result(f"notes merged with and pushed to {d.remote}", d)

    execute(ctx, action)


@app.command("heartbeat")
def heartbeat(
    ctx: typer.Context,
    task: Annotated[str, typer.Argument(help="The task whose lease to renew.")],
) -> None:
    """Renew this machine's lease on a task (remote mode; for long gates)."""

    def action(layout: Layout) -> Result:
        d = remote.heartbeat(layout, task_name(task))
        return Result(f"lease on {d.task} renewed until {d.expires_at}", d, task=d.task)

    execute(ctx, action)
