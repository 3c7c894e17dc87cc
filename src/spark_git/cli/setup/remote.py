"""`spark-git remote enable|disable|status|check|sync` and `spark-git heartbeat`."""

from __future__ import annotations

from typing import Annotated

import typer

from spark_git.cli.common import Result, execute
from spark_git.cli.root import app
from spark_git.core.layout import Layout, task_name
from spark_git.ops.setup import remote
from spark_git.ops.shared import remote as remote_view
from spark_git.state.backends import open_store

remote_app = typer.Typer(help="Remote mode: task locks, state, queue and notes on a shared git remote.", no_args_is_help=True)
app.add_typer(remote_app, name="remote")


@remote_app.command("enable")
def enable(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The git remote every machine shares (e.g. origin).")],
    machine: Annotated[str | None, typer.Option("--machine", help="This machine's name in leases (default: the host name).")] = None,
    state_branch: Annotated[str | None, typer.Option("--state-branch", help="Keep the state in this one branch (e.g. spark/state): for hosts refusing refs/spark/*.")] = None,
) -> None:
    """Switch this clone to remote mode (checks the remote answers first)."""

    def action(layout: Layout) -> Result:
        d = remote.enable(layout, name, machine, state_branch)
        where = f"branch {d.state_branch} of {d.remote}" if d.state_branch else d.remote
        return Result(f"remote mode on: locks and state on {where} ({d.url}), this machine is {d.machine!r}", d,
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
        d = remote_view.status(open_store(layout))
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
        summary = f"{d.remote} ({d.url}): custom refs {d.custom_refs}, notes refs {d.notes_refs}, atomic {d.atomic}"
        if not d.atomic:
            return Result(summary + "; remote mode needs --atomic honoured", d, status="FAIL", exit_code=1)
        if d.needs_state_branch:  # usable, with the state in one branch
            fix = f"spark-git remote enable {d.remote} --state-branch spark/state"
            return Result(f"{summary}; this host refuses custom refs: keep the state in a branch", d, next=[fix])
        return Result(summary, d)

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
