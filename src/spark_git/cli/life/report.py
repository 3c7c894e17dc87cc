"""`report`: what an agent hands in (its status, decision and evidence)."""

from __future__ import annotations

from typing import Annotated

import typer

from spark_git.cli.common import Result, SessionOpt, execute, state
from spark_git.cli.root import app
from spark_git.core.layout import Layout
from spark_git.ops.life import reports
from spark_git.state.backends import open_store
from spark_git.state.locks import session_from

TaskArg = Annotated[str, typer.Argument(help="Task name.")]


@app.command()
def report(
    ctx: typer.Context,
    task: TaskArg,
    agent: Annotated[str, typer.Option("--agent", "-a", help="Agent name.")],
    status: Annotated[str, typer.Option("--status", help="WORKING, IN_PROGRESS, WAITING, MERGING, COMPLETE, BLOCKED or ERROR.")],
    decision: Annotated[str | None, typer.Option("--decision", help="Reviewers: APPROVED, REJECTED (bound to the current task head) or PENDING.")] = None,
    feedback: Annotated[str | None, typer.Option("--feedback", help="Review feedback or the error message.")] = None,
    work_remaining: Annotated[str | None, typer.Option("--work-remaining", help="Updaters: what is left ('none' when done).")] = None,
    report_file: Annotated[str | None, typer.Option("--report", help="Path of the agent's report (default: <task>/<task>-<agent>-requirements.md).")] = None,
    blocking: Annotated[list[str] | None, typer.Option("--blocking", help="SCOPE_NEGOTIATION: an item that must be fixed now (repeatable).")] = None,
    deferrable: Annotated[list[str] | None, typer.Option("--deferrable", help="SCOPE_NEGOTIATION: an item that may wait (repeatable).")] = None,
    scope: Annotated[str | None, typer.Option("--scope", help="SCOPE_NEGOTIATION decision: RESOLVE_NOW or DEFER.")] = None,
    evidence: Annotated[list[str] | None, typer.Option("--evidence", help="The agent's 004 output JSON and/or 000 SPARK state JSON (repeatable); checked by the guards.")] = None,
    session: SessionOpt = None,
) -> None:
    """An agent reports its status (writes agents/<agent>/status.json)."""
    def action(layout: Layout) -> Result:
        d = reports.report(layout, open_store(layout), task, agent, status=status, session=session_from(session), decision=decision, feedback=feedback,
                           work_remaining=work_remaining, report_path=report_file, blocking=blocking, deferrable=deferrable, scope=scope,
                           cwd=state(ctx).cwd, evidence=evidence)
        s = d.status
        extra = f" {s.decision} for {s.last_review_sha[:12]}" if s.decision and s.last_review_sha else ""
        if s.evidence:
            extra += " with evidence (" + ", ".join(f.kind + (f" {s.evidence.output.status}" if f.kind == "output" and s.evidence.output else "") for f in s.evidence.files) + ")"
        return Result(f"{d.agent} ({d.role}) reports {s.status}{extra} on {d.task} (round {s.round}, task in {d.task_state})", d, task=d.task,
                      next=[f"spark-git status {d.task}"])

    execute(ctx, action)
