"""`cleanup`, `abandon` and `archive list|restore` (`lock break` lives in cli/landing/lock.py beside the other lock commands)."""

from __future__ import annotations

import shlex
from typing import Annotated

import typer

from spark_git.cli.common import Out, Result, SessionOpt, TaskArg, execute, progress, state
from spark_git.cli.root import app
from spark_git.core.layout import Layout
from spark_git.ops.ending import archive
from spark_git.ops.ending import cleanup as ops_cleanup
from spark_git.ops.ending.cleanup import EndData
from spark_git.state.locks import session_from

archive_app = typer.Typer(help="See and restore what cleanup/abandon archived (refs/spark/archive/...).", no_args_is_help=True)


app.add_typer(archive_app, name="archive")


DryRunOpt = Annotated[bool, typer.Option("--dry-run", help="Say what would be archived, removed and deleted; change nothing.")]


def _end_result(d: EndData, verb: str, again: str) -> Result:
    """`again`: the command line that does for real what a --dry-run showed."""
    counts = f"{len(d.removed_worktrees)} worktree(s) removed, {len(d.deleted_branches)} branch(es) deleted, {len(d.archived)} archive ref(s)"
    if d.already_done:
        summary = f"task {d.task} was already {verb}"
    elif d.dry_run:
        summary = f"dry run, nothing changed: task {d.task} would be {verb}: " + counts.replace(" removed", " to remove").replace(" deleted", " to delete")
    else:
        summary = f"task {d.task} {verb}: {counts}; audit trail kept"
    nxt = [again] if d.dry_run and not d.already_done else [f"cd {shlex.quote(str(d.go_to))}"] if d.go_to else []
    if (d.archived or d.kept_paths) and not d.dry_run:
        nxt.append(f"spark-git archive list {d.task}")
    words = ("would archive", "would remove", "would delete", "would keep") if d.dry_run else ("archived", "removed", "deleted", "kept")
    n = max(9, *map(len, words))
    w = [x.ljust(n) for x in words]

    def human(out: Out) -> None:
        for a in d.archived:
            out.print(f"  {w[0]} {a.ref}  {a.sha[:12] or 'a new commit'}  ({a.what})")
            for f in a.files:
                out.print(" " * (n + 3) + f)
        for p in d.removed_worktrees:
            out.print(f"  {w[1]} {p}")
        for b in d.deleted_branches:
            out.print(f"  {w[2]} branch {b}")
        for b in d.kept_branches:
            out.print(f"  {w[3]} branch {b} (not contained in the base branch; also archived)")
        for p in d.kept_paths:
            out.print(f"  {w[3]} {p} (spark-git does not delete it)")
        out.print(f"  {'snapshot'.ljust(n)} {d.snapshot}")
        if d.go_to and not d.dry_run:
            out.print(f"  [yellow]your working directory was removed: cd {d.go_to}[/yellow]")

    return Result(summary, d, task=d.task, next=nxt, human=human)


@app.command()
def cleanup(
    ctx: typer.Context,
    task: TaskArg,
    force: Annotated[bool, typer.Option("--force", help="Save uncommitted changes as a commit on an archive ref, then remove.")] = False,
    abandon_: Annotated[bool, typer.Option("--abandon", help="Allow a task that is not COMPLETE (ends it as ABANDONED; work is archived).")] = False,
    why: Annotated[str | None, typer.Option("--why", help="Reason, recorded (with --abandon; or for a task no agent ever reported on).")] = None,
    dry_run: DryRunOpt = False,
    session: SessionOpt = None,
) -> None:
    """End a COMPLETE task: archive unmerged heads, write audit-snapshot.json, remove worktrees and merged branches, release the lock."""
    def action(layout: Layout) -> Result:
        d = ops_cleanup.cleanup(layout, task, session=session_from(session), force=force, abandon=abandon_, why=why, caller=state(ctx).cwd,
                        dry_run=dry_run, progress=progress(ctx))
        again = f"spark-git cleanup {task}" + (" --force" if force else "") + (" --abandon" if abandon_ else "") + (f" --why {shlex.quote(why)}" if why else "")
        return _end_result(d, "cleaned up" if d.final_state == "CLEANUP" else "abandoned", again)

    execute(ctx, action)


@app.command()
def abandon(
    ctx: typer.Context,
    task: TaskArg,
    why: Annotated[str, typer.Option("--why", help="Why the task is abandoned; recorded in the audit trail.")],
    force: Annotated[bool, typer.Option("--force", help="Also remove worktrees locked with `git worktree lock` (logged).")] = False,
    dry_run: DryRunOpt = False,
    session: SessionOpt = None,
) -> None:
    """Stop a task at any state: archive every unmerged head and uncommitted work, remove worktrees, release the lock."""
    def action(layout: Layout) -> Result:
        d = ops_cleanup.abandon(layout, task, why=why, session=session_from(session), caller=state(ctx).cwd, force=force, dry_run=dry_run,
                        progress=progress(ctx))
        return _end_result(d, "abandoned", f"spark-git abandon {task} --why {shlex.quote(why)}" + (" --force" if force else ""))

    execute(ctx, action)


@archive_app.command("list")
def archive_list(
    ctx: typer.Context,
    task: Annotated[str | None, typer.Argument(help="Only this task's archive refs.", show_default=False)] = None,
) -> None:
    """List archive refs: ref, commit, date, subject."""
    from spark_git.core.layout import task_name
    def action(layout: Layout) -> Result:
        if task is not None:
            task_name(task)
        d = archive.list_refs(layout, task)

        def human(out: Out) -> None:
            for e in d.entries:
                out.print(f"  {e.ref}  {e.sha[:12]}  {e.date}  {e.subject}")
            for k in d.kept:
                out.print(f"  kept      {k.path}  (a nested repository moved out of a removed worktree)")

        n = len(d.entries)
        nxt = [f"spark-git archive restore {d.entries[0].ref} --branch NAME"] if d.entries else []
        return Result(f"{n} archive ref{'s' if n != 1 else ''}", d, task=task, next=nxt, human=human)

    execute(ctx, action)


@archive_app.command("restore")
def archive_restore(
    ctx: typer.Context,
    ref: Annotated[str, typer.Argument(help="Archive ref (refs/spark/archive/<task>/<name> or <task>/<name>).")],
    branch: Annotated[str | None, typer.Option("--branch", help="Branch to create (default: the archived name).")] = None,
) -> None:
    """Create a branch at an archived commit (never moves an existing branch)."""
    def action(layout: Layout) -> Result:
        d = archive.restore(layout, ref, branch)
        # its own worktree beside the main one: `git switch` would take the main worktree off the base branch
        where = layout.main_worktree.parent / f"{layout.main_worktree.name}-{d.branch.replace('/', '-')}"
        return Result(f"branch {d.branch} created at {d.sha[:12]} from {d.ref}", d, next=[shlex.join(["git", "worktree", "add", str(where), d.branch])])

    execute(ctx, action)
