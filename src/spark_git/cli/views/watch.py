"""`watch`: the live view of every task (cli/views/watchapp.py, Textual, imported only here), or
one frame of it with --once (text; the snapshot with --json)."""

from __future__ import annotations

from typing import Annotated

import typer

from spark_git.cli.common import Out, Result, execute, state
from spark_git.cli.root import app
from spark_git.core.errors import BadInput
from spark_git.core.layout import Layout


@app.command()
def watch(
    ctx: typer.Context,
    once: Annotated[bool, typer.Option("--once", help="Print one frame and exit (for scripts and tests; --json gives the snapshot).")] = False,
    no_radar: Annotated[bool, typer.Option("--no-radar", help="Skip the conflict radar on each refresh.")] = False,
) -> None:
    """A live view: what waits on you, every live task, each agent, the queue and the radar; redrawn as the state changes. Reads only."""
    json_mode = state(ctx).json

    def action(layout: Layout) -> Result:
        from spark_git.ops.views import watch as watch_mod

        if json_mode and not once:
            raise BadInput("--json needs --once: the live view draws to a terminal", next=["spark-git watch --once --json"])
        if not once:
            from spark_git.cli.views import watchapp

            watchapp.run(layout, with_radar=not no_radar)
            return Result("watch ended")
        from spark_git.state.backends import open_store

        snap = watch_mod.snapshot(layout, open_store(layout), with_radar=not no_radar)

        def human(out: Out) -> None:
            from spark_git.cli import fit
            from spark_git.cli.views import watchframe

            for line in watchframe.frame(snap, fit.width()):
                out.print(line, markup=False, highlight=False)

        return Result(f"{len(snap.tasks)} live task(s), {len(snap.attention)} waiting on you", snap, human=human)

    execute(ctx, action)
