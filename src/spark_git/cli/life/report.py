"""`report`: what an agent hands in (its status, decision and evidence)."""

from __future__ import annotations

from typing import Annotated

import typer

from spark_git.cli.common import Result, SessionOpt, execute, state
from spark_git.cli.root import app
from spark_git.core.caller import agent_session
from spark_git.core.errors import Blocked
from spark_git.core.layout import Layout, agent_name, task_name
from spark_git.ops.life import handin, reports
from spark_git.ops.life.handin import HandIn
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
        if handin.boxed(layout):
            return _hand_in(layout, HandIn(task=task, agent=agent, status=status, decision=decision, feedback=feedback, work_remaining=work_remaining,
                                           report_path=report_file, blocking=blocking or [], deferrable=deferrable or [], scope=scope),
                            evidence or [], state(ctx).cwd, session_from(session))
        store = open_store(layout)
        handin.file_handed_in(layout, store, task_name(task))
        d = reports.report(layout, store, task, agent, status=status, session=session_from(session), decision=decision, feedback=feedback,
                           work_remaining=work_remaining, report_path=report_file, blocking=blocking, deferrable=deferrable, scope=scope,
                           cwd=state(ctx).cwd, evidence=evidence)
        s = d.status
        extra = f" {s.decision} for {s.last_review_sha[:12]}" if s.decision and s.last_review_sha else ""
        if s.evidence:
            extra += " with evidence (" + ", ".join(f.kind + (f" {s.evidence.output.status}" if f.kind == "output" and s.evidence.output else "") for f in s.evidence.files) + ")"
        return Result(f"{d.agent} ({d.role}) reports {s.status}{extra} on {d.task} (round {s.round}, task in {d.task_state})", d, task=d.task,
                      next=[f"spark-git status {d.task}"])

    execute(ctx, action)


def _hand_in(layout: Layout, h: HandIn, evidence: list[str], cwd: object, session: str | None) -> Result:
    """Inside an agent's box: the report is handed in for the coordinator to file (ops/life/handin.py)."""
    from pathlib import Path

    from spark_git.ops.shared.taskfile import load_task
    from spark_git.state.backends import open_store
    from spark_git.state.report_evidence import AgentStatus

    h.task, h.agent = task_name(h.task), agent_name(h.agent)
    if session != agent_session(h.task, h.agent):
        raise Blocked(f"this process cannot write {layout.spark_dir} (an agent's box) and is not agent {h.agent} of {h.task}: "
                      "from a box an agent reports only as itself", next=[f"spark-git env {h.task} --agent {h.agent}"], task=h.task)
    # Not checked here: the records key that verifies task.json is kept from the box. The hand-in only
    # writes a file in the agent's own admin dir; the coordinator's command that files it checks the task.
    tf = load_task(open_store(layout), h.task, check=False)
    if h.agent not in tf.agents:
        raise Blocked(f"task {h.task!r} has no agent {h.agent!r}", task=h.task, next=[f"spark-git status {h.task}"])
    h.seen = layout.git().branch_head(tf.task_branch)
    path = handin.hand_in(layout, Path(tf.agents[h.agent].worktree), h, evidence, Path(str(cwd)))
    st = AgentStatus(agent=h.agent, task=h.task, status=h.status, decision=h.decision, feedback=h.feedback, work_remaining=h.work_remaining,
                     report_path=h.report_path, task_state=tf.state, task_head=h.seen)
    d = reports.ReportData(task=h.task, agent=h.agent, role=tf.agents[h.agent].role, status=st, task_state=tf.state)
    return Result(f"{h.agent} handed in {h.status} on {h.task} ({path}): the coordinator's next `advance`, `agent run` or `report` files it",
                  d, task=h.task, next=[f"spark-git status {h.task}"])
