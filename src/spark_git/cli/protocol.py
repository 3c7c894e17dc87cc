"""`advance`, `classify`, `report`, `audit` (state-machine issue)."""

from __future__ import annotations

from typing import Annotated

import typer

from spark_git.cli.common import Out, Result, SessionOpt, execute, state
from spark_git.cli.root import app
from spark_git.core.errors import BadInput
from spark_git.core.layout import Layout
from spark_git.state.locks import session_from

TaskArg = Annotated[str, typer.Argument(help="Task name.")]


@app.command()
def advance(
    ctx: typer.Context,
    task: TaskArg,
    to: Annotated[str | None, typer.Option("--to", help="Target state (default: the next state of the task's variant).")] = None,
    why: Annotated[str | None, typer.Option("--why", help="Justification (needed to go back to REQUIREMENTS).")] = None,
    rerun: Annotated[bool, typer.Option("--rerun", help="VALIDATION → REVIEW: run the build gate even if this tree already passed it.")] = False,
    session: SessionOpt = None,
) -> None:
    """Move a task to its next protocol state; refused (exit 3) with every unmet condition."""
    from spark_git import protocol
    from spark_git.ops import advance as ops_advance

    def action(layout: Layout) -> Result:
        d = ops_advance.advance(layout, task, to, session=session_from(session), why=why, rerun=rerun)

        def human(out: Out) -> None:
            if d.build_note:
                out.print(f"  {d.build_note}")
            for w in d.waived:
                out.print(f"  [yellow]not enforced (protocol light):[/yellow] {w}")
            out.print(f"  next legal state(s): {', '.join(d.next_states) or 'none'}")

        # awaiting the human: their approval comes before `complete` can land anything
        first = [f"spark-git approve {d.task} --changes"] if d.to == protocol.State.AWAITING_USER_APPROVAL else []
        return Result(f"task {d.task}: {d.from_state} → {d.to}", d, task=d.task, human=human,
                      next=[f"spark-git status {d.task}", *first] + [protocol.command_to(d.task, s, d.to) for s in d.next_states[:1]])

    execute(ctx, action)


@app.command()
def classify(
    ctx: typer.Context,
    task: TaskArg,
    files: Annotated[list[str] | None, typer.Option("--files", help="Paths the task touches: --files a b c (or repeated, or a,b; default: the task branch's diff against its base).")] = None,
    more: Annotated[list[str] | None, typer.Argument(help="More paths after --files (`--files a b c`).", show_default=False)] = None,
    risk: Annotated[str | None, typer.Option("--risk", help="Override: HIGH, MEDIUM or LOW (needs --why).")] = None,
    why: Annotated[str | None, typer.Option("--why", help="Reason for --risk; logged.")] = None,
    session: SessionOpt = None,
) -> None:
    """Decide the risk level, workflow variant and required agents; create their worktrees; write task.md."""
    from spark_git.ops import classify as cl

    def action(layout: Layout) -> Result:
        if more and not files:
            raise BadInput(f"unexpected argument(s) {' '.join(more)}: paths go after --files (--files a b c)")
        flat = [p for f in [*(files or []), *(more or [])] for p in f.split(",")]
        d = cl.classify(layout, task, files=flat or None, risk=risk, why=why, session=session_from(session))
        dec = d.decision

        def human(out: Out) -> None:
            for r in dec.reasons:
                out.print(f"  {r}")
            out.print(f"  agents: {', '.join(dec.agents) or '-'}" + (f"  (added: {', '.join(d.added_agents)})" if d.added_agents else ""))
            out.print(f"  task.md: {d.task_md}" + ("" if d.task_md_written else " (kept as it was)"))
            cx = d.complexity
            out.print(f"  complexity {cx.score}/{cx.max_score}: {cx.recommendation}, suggests protocol {cx.suggested_protocol}"
                      f" (in effect: {cx.protocol_in_effect}; `protocol` in the config decides)" + "".join(f"\n    - {s}" for s in cx.signals))

        return Result(f"task {d.task}: risk {dec.level}, variant {dec.variant}", d, task=d.task, human=human, next=[f"spark-git advance {d.task}"])

    execute(ctx, action)


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
    from spark_git.ops import reports

    def action(layout: Layout) -> Result:
        d = reports.report(layout, task, agent, status=status, session=session_from(session), decision=decision, feedback=feedback,
                           work_remaining=work_remaining, report_path=report_file, blocking=blocking, deferrable=deferrable, scope=scope,
                           cwd=state(ctx).cwd, evidence=evidence)
        s = d.status
        extra = f" {s.decision} for {s.last_review_sha[:12]}" if s.decision and s.last_review_sha else ""
        if s.evidence:
            extra += " with evidence (" + ", ".join(f.kind + (f" {s.evidence.output.status}" if f.kind == "output" and s.evidence.output else "") for f in s.evidence.files) + ")"
        return Result(f"{d.agent} ({d.role}) reports {s.status}{extra} on {d.task} (round {s.round}, task in {d.task_state})", d, task=d.task,
                      next=[f"spark-git status {d.task}"])

    execute(ctx, action)


@app.command("audit")
def audit_cmd(ctx: typer.Context, task: TaskArg) -> None:
    """The task's audit trail as a timeline, with protocol smells flagged."""
    from spark_git.ops import reports

    def action(layout: Layout) -> Result:
        d = reports.audit_view(layout, task)

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


@app.command()
def brief(
    ctx: typer.Context,
    task: TaskArg,
    agent: Annotated[str, typer.Option("--agent", "-a", help="The agent to dispatch.")],
) -> None:
    """Print the agent's Universal Input JSON (seed 004): goal, non-goals, context files, changed files, checks, risk flags."""
    import json

    from spark_git.ops import brief as ops_brief

    def action(layout: Layout) -> Result:
        d = ops_brief.brief(layout, task, agent)
        if not state(ctx).json:  # the Input JSON itself, to hand to the sub-agent as-is
            print(json.dumps(d.model_dump(mode="json"), indent=2))
            raise typer.Exit(0)
        return Result(f"brief for {d.agent} on {d.task.id} ({len(d.task.session_changed_files)} changed file(s))", d, task=d.task.id,
                      next=[f"spark-git report {d.task.id} --agent {d.agent} --status COMPLETE --evidence output.json"])  # output.json: the agent's Output JSON

    execute(ctx, action)

