"""`advance` and `classify`: the protocol's transitions, and the task's complexity and planning."""

from __future__ import annotations

from typing import Annotated

import typer

from spark_git.cli.common import Out, Result, SessionOpt, execute
from spark_git.cli.root import app
from spark_git.core.errors import BadInput
from spark_git.core.layout import Layout
from spark_git.ops.life import advance as ops_advance
from spark_git.ops.life import classify as cl
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
    from spark_git.ops.shared import loopstep

    def action(layout: Layout) -> Result:
        d = ops_advance.advance(layout, task, to, session=session_from(session), why=why, rerun=rerun)

        def human(out: Out) -> None:
            if d.build_note:
                out.print(f"  {d.build_note}")
            for w in d.waived:
                out.print(f"  [yellow]not enforced (protocol light):[/yellow] {w}")
            out.print(f"  next legal state(s): {', '.join(d.next_states) or 'none'}")

        # awaiting the human: their approval comes before `complete` can land anything
        first = loopstep.first_step(d.task, d.to, layout.config.protocol)
        later = [protocol.command_to(d.task, s, d.to) for s in d.next_states[:1]]
        return Result(f"task {d.task}: {d.from_state} → {d.to}", d, task=d.task, human=human,
                      next=[*first, *(c for c in later if c not in first), f"spark-git status {d.task}"])

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
