"""`spark-git verify [RANGE] [--json] [--fetch]`: every landing on the base branch, checked from git alone;
`spark-git accept <commit> --why TEXT`: the human keeps a commit that reached it without a landing."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from spark_git.cli.common import Out, Result, _esc, execute
from spark_git.cli.root import app
from spark_git.core.layout import Layout

MARK = {"landed": "[green]✓[/green]", "accepted": "[yellow]✓[/yellow]", "failed": "[red]✗[/red]", "before": "[dim]·[/dim]"}


def _handle(sha: str, noted: bool) -> str:
    """What a human does with a commit that failed: look at the note it carries, or accept it."""
    from spark_git.core.gitattest import ATTEST_REF

    return f"git notes --ref={ATTEST_REF} show {sha}" if noted else f"spark-git accept {sha} --why TEXT"


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
                          next=[f"git show --stat {bad[0].sha}", _handle(bad[0].sha, bad[0].noted)])
        kept = f", {d.accepted} accepted by a human" if d.accepted else ""
        return Result(f"{d.landed} landing(s) on {d.base} verified{kept} ({d.before} from before adoption)", d, human=human)

    execute(ctx, action)


@app.command()
def accept(
    ctx: typer.Context,
    commit: Annotated[str, typer.Argument(help="A commit the base branch moved to without a landing (`spark-git verify` names it).")],
    why: Annotated[str, typer.Option("--why", help="Why it is kept: recorded and signed with your approval key.")],
) -> None:
    """Keep a commit that reached the base branch behind spark-git's back: your signed decision, which `verify` then shows."""
    def action(layout: Layout) -> Result:
        from spark_git.core.gitattest import ATTEST_REF
        from spark_git.ops.landing import accept as ops
        from spark_git.state.backends import open_store

        d = ops.accept(layout, open_store(layout), commit, why, interactive=sys.stdin.isatty())
        return Result(f"{d.commit[:12]} on {d.base} accepted by {d.signer}: {json.dumps(d.why)}", d,
                      next=["spark-git verify"] + ([] if d.pushed else [f"git push origin {ATTEST_REF}"]))

    execute(ctx, action)
