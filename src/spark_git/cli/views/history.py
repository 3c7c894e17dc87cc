"""`who` and `log`: the task branch's commits by agent, with gate and approval annotations."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from spark_git.cli.common import Out, Result, TaskArg, _esc, execute
from spark_git.cli.root import app
from spark_git.core.layout import Layout
from spark_git.gates import evidence
from spark_git.ops.shared import history
from spark_git.state.backends import open_store

if TYPE_CHECKING:
    pass




@app.command()
def who(ctx: typer.Context, task: TaskArg) -> None:
    """Who wrote what on the task branch: commits, files and lines per agent."""
    def action(layout: Layout) -> Result:
        d = history.who(layout, open_store(layout), task)

        def human(out: Out) -> None:
            from rich.table import Table

            tbl = Table(box=None, padding=(0, 2), show_edge=False)
            for col in ("agent", "commits", "files", "+lines", "-lines"):
                tbl.add_column(col)
            for w in d.agents:
                tbl.add_row(w.agent, str(len(w.commits)), str(len(w.files)), str(w.added), str(w.removed))
            if d.unattributed:
                tbl.add_row("(unattributed)", str(len(d.unattributed)), "", "", "")
            out.print(tbl)
            for w in d.agents:
                out.print(f"  {w.agent}: {', '.join(w.files)}")

        return Result(f"{len(d.agents)} agent(s) on {d.task_branch} ({d.base_commit[:12]}..{d.head[:12]})", d, task=d.task, human=human)

    execute(ctx, action)


@app.command("log")
def log_(ctx: typer.Context, task: TaskArg) -> None:
    """The task branch's history with agent, gate and approval annotations."""
    def action(layout: Layout) -> Result:
        d = history.log(layout, open_store(layout), task)

        def human(out: Out) -> None:
            for c in d.commits:
                marks = []
                for g in c.gates:
                    marks.append(f"gate {g.get('gate')} {evidence.result_of(g)}")
                for a in c.approvals:
                    marks.append(f"approved by {a.get('by')}")
                out.print(f"  {c.sha[:12]} [cyan]{_esc(c.agent or '?')}[/cyan] {_esc(c.subject)}" + (f"  [dim]({_esc('; '.join(marks))})[/dim]" if marks else ""))

        return Result(f"{len(d.commits)} commit(s) on {d.task_branch} beyond the base", d, task=d.task, human=human)

    execute(ctx, action)
