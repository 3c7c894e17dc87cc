"""`spark-git verify [RANGE] [--json] [--fetch]`: every landing on the base branch, checked from git alone."""

from __future__ import annotations

from typing import Annotated

import typer

from spark_git.cli.common import Out, Result, _esc, execute
from spark_git.cli.root import app
from spark_git.core.layout import Layout

MARK = {"landed": "[green]✓[/green]", "failed": "[red]✗[/red]", "before": "[dim]·[/dim]"}


@app.command()
def verify(
    ctx: typer.Context,
    rev_range: Annotated[str | None, typer.Argument(metavar="[RANGE]", help="Commits to check (default: the base branch from its first landing, or from [verify] since).")] = None,
    fetch: Annotated[bool, typer.Option("--fetch", help="Fetch refs/notes/spark-attest and the approval notes from the remote first.")] = False,
    remote: Annotated[str, typer.Option("--remote", help="The remote --fetch reads.")] = "origin",
) -> None:
    """Check that every commit on the base branch landed through spark-git: its attestation, lander, approval and gates."""
    def action(layout: Layout) -> Result:
        from spark_git.ops.landing import verify as ops

        d = ops.verify(layout, rev_range, remote if fetch else None)

        def human(out: Out) -> None:
            for c in d.commits:
                what = c.task if c.status == "landed" else "before spark-git was adopted" if c.status == "before" else c.reason
                out.print(f"  {MARK[c.status]} {c.sha[:12]}  {_esc(str(what))}" + (f"  [dim](task {_esc(c.task)})[/dim]" if c.status == "failed" and c.task else ""))

        bad = [c for c in d.commits if c.status == "failed"]
        if bad:
            return Result(f"{len(bad)} commit(s) on {d.base} did not land through spark-git's queue, first {bad[0].sha[:12]}: {bad[0].reason}",
                          d, human=human, status="FAIL", exit_code=1,
                          next=[f"git show --stat {bad[0].sha}", f"git notes --ref=refs/notes/spark-attest show {bad[0].sha}"])
        return Result(f"{d.landed} landing(s) on {d.base} verified ({d.before} from before adoption)", d, human=human)

    execute(ctx, action)
