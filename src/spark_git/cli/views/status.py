"""`status`: every task, drawn to the terminal's width (cli/views/statusview.py), or one task."""

from __future__ import annotations

from typing import Annotated

import typer

from spark_git.cli.common import Out, Result, execute
from spark_git.cli.root import app
from spark_git.core.layout import Layout
from spark_git.ops.shared.remote import RemoteStatusData
from spark_git.ops.views import status as status_mod


@app.command()
def status(
    ctx: typer.Context,
    task: Annotated[str | None, typer.Argument(help="Only this task, in full.", show_default=False)] = None,
    agents: Annotated[bool, typer.Option("--agents", help="Every task in full: agents, flags, conflict radar, next states.")] = False,
    all_: Annotated[bool, typer.Option("--all", help="Also the ended tasks (cleaned up or abandoned).")] = False,
    no_radar: Annotated[bool, typer.Option("--no-radar", help="Skip the conflict radar (`git merge-tree` of the unmerged branches).")] = False,
) -> None:
    """One line per live task (state, owner, idle, agents, queue, problems); a task name or --agents for the full picture. Reads only."""
    from spark_git.core.layout import task_name
    def action(layout: Layout) -> Result:
        if task is not None:
            task_name(task)
        d = status_mod.collect(layout, task, with_radar=not no_radar, ended=all_)

        def human(out: Out) -> None:
            from spark_git.cli import fit
            from spark_git.cli.views import statusview

            if d.remote is not None:
                _render_remote(out, d.remote)
            statusview.render(out, d, detail=agents or task is not None, width=fit.width())

        n = len(d.tasks)
        from spark_git.cli.views.statusview import next_commands

        return Result(f"{n} task{'s' if n != 1 else ''} under {d.tasks_root}", d, task=task, human=human,
                      next=[c for t in d.tasks for c in next_commands(t)])

    execute(ctx, action)


def _render_remote(out: Out, r: RemoteStatusData) -> None:
    out.print(f"remote {r.remote}: {len(r.tasks)} task lock(s) on the shared remote; this machine is {r.machine}")
    for t in r.tasks:
        stale = "  [red]STALE: lease expired (`spark-git lock break " + t.task + " --why ...` takes it over)[/red]" if t.stale else ""
        out.print(f"  {t.task}  {t.state}  held by {'this machine' if t.mine else t.machine} (session {t.session}, pid {t.pid}), "
                  f"lease renewed {t.lease_age_s:.0f}s ago{stale}")
