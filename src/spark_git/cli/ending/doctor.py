"""`doctor`: find and repair what an interrupted command left behind."""

from __future__ import annotations

from typing import Annotated

import typer

from spark_git.cli.common import Out, Result, SessionOpt, execute, progress
from spark_git.cli.root import app
from spark_git.core.layout import Layout
from spark_git.ops.ending import doctor as mod
from spark_git.ops.ending.doctor import DoctorData
from spark_git.state.locks import session_from

DryRunOpt = Annotated[bool, typer.Option("--dry-run", help="Say what would be archived, removed and deleted; change nothing.")]


@app.command()
def doctor(
    ctx: typer.Context,
    task: Annotated[str | None, typer.Argument(help="Only this task (the main lock and git's lock files are always checked).", show_default=False)] = None,
    fix: Annotated[bool, typer.Option("--fix", help="Repair what needs no judgement, archiving before anything could drop a commit.")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="With --fix: say what it would repair, archive and remove; change nothing.")] = False,
    session: SessionOpt = None,
) -> None:
    """Find (and with --fix repair) crash leftovers: locks, worktrees, branches, state files, git lock files. Exit 1 while problems remain."""
    def action(layout: Layout) -> Result:
        d = mod.run(layout, task, fix=fix, session=session_from(session), dry_run=dry_run, progress=progress(ctx))
        broken = [f for f in d.findings if f.broken and not f.fixed]
        if dry_run:
            return _doctor_dry_run(d, task)

        def human(out: Out) -> None:
            for f in d.findings:
                mark = "[green]fixed[/green]" if f.fixed else ("[red]broken[/red]" if f.broken else "[dim]note[/dim]")
                out.print(f"  {mark}  {f.where}: {f.problem}")
                out.print(f"         repair: {f.repair}" if not f.fixed else f"         done: {f.repair}")

        fixed = sum(1 for f in d.findings if f.fixed)
        if broken:
            summary = f"{len(broken)} problem(s) remain" + (f", {fixed} fixed" if fixed else "") + f" ({d.tasks_checked} task(s) checked)"
            fixes = [] if fix or not any(f.fixable for f in broken) else [f"spark-git doctor{' ' + task if task else ''} --fix"]  # only when --fix would repair one
            return Result(summary, d, task=task, next=[f.repair.split("  (")[0] for f in broken if f.repair.startswith("spark-git")] or fixes,
                          human=human, status="FAIL", exit_code=1)
        summary = ("all repaired: " if fixed else "nothing broken: ") + f"{d.tasks_checked} task(s) checked" + (f", {fixed} fixed" if fixed else "")
        return Result(summary, d, task=task, human=human)

    execute(ctx, action)


def _doctor_dry_run(d: DoctorData, task: str | None) -> Result:
    """doctor --fix --dry-run: each finding with what --fix would do. Its exit code is the one --fix
    would end with: 1 while a problem --fix cannot repair remains, else 0 (nothing is attempted)."""
    would = [f for f in d.findings if f.fixable]

    def human(out: Out) -> None:
        for f in d.findings:
            mark = "[yellow]would fix[/yellow]" if f.fixable else ("[red]broken[/red]   " if f.broken else "[dim]note[/dim]     ")
            out.print(f"  {mark}  {f.where}: {f.problem}")
            out.print(f"             repair: {f.repair}")

    left = sum(1 for f in d.findings if f.broken and not f.fixable)
    summary = f"dry run, nothing changed: --fix would repair {len(would)} problem(s)" + (f", {left} need(s) a human" if left else "") + f" ({d.tasks_checked} task(s) checked)"
    nxt = [f"spark-git doctor{' ' + task if task else ''} --fix"] if would else []
    if left:
        return Result(summary, d, task=task, human=human, status="FAIL", exit_code=1,
                      next=nxt + [f.repair.split("  (")[0] for f in d.findings if f.broken and not f.fixable and f.repair.startswith("spark-git")])
    return Result(summary, d, task=task, human=human, next=nxt)
