"""`audit`: a task's timeline, invocations and smells."""

from __future__ import annotations

import typer

from spark_git.cli.common import Out, Result, TaskArg, execute
from spark_git.cli.root import app
from spark_git.core.layout import Layout
from spark_git.ops.views import audit


@app.command("audit")
def audit_cmd(ctx: typer.Context, task: TaskArg) -> None:
    """The task's audit trail as a timeline, with protocol smells flagged."""
    def action(layout: Layout) -> Result:
        d = audit.audit_view(layout, task)

        def human(out: Out) -> None:
            for e in d.timeline:
                out.print(f"  {e.at[:19]}  [cyan]{e.kind:<19}[/cyan] {e.text}")
            for a in d.agents:
                out.print(f"  agent {a.agent}: {a.reports} report(s) {a.first_report[:19]} … {a.last_report[:19]}, last {a.last_status}  ({a.working_dir})")
            for s in d.smells:
                out.print(f"  [red]smell:[/red] {s}")

        n = len(d.smells)
        return Result(f"audit of {d.task}: {len(d.timeline)} event(s), {n} smell{'s' if n != 1 else ''}", d, task=d.task, human=human)

    execute(ctx, action)
