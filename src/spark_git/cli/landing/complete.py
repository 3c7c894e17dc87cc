"""`complete`: land the approved task on its base through the merge queue, or through the forge (`--via`)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from spark_git.cli.common import Out, Result, SessionOpt, TaskArg, execute, gate_line, state, ticker
from spark_git.cli.root import app
from spark_git.core.errors import BadInput
from spark_git.core.layout import Layout
from spark_git.ops.landing import complete as m
from spark_git.ops.landing import complete_via as forge
from spark_git.state.locks import session_from

if TYPE_CHECKING:
    pass




RerunOpt = Annotated[bool, typer.Option("--rerun", help="Run the gate even if this tree already passed it (ignore its recorded verdict).")]


@app.command()
def complete(
    ctx: typer.Context,
    task: TaskArg,
    no_wait: Annotated[bool, typer.Option("--enqueue", "--no-wait", help="Return once the task is in the merge queue (--no-wait: the old name, still accepted; the root option --no-wait is about held mutexes).")] = False,
    rerun: RerunOpt = False,
    session: SessionOpt = None,
    via: Annotated[str | None, typer.Option("--via", help="Land through the forge instead (gh or glab): push the task branch, open the PR/MR with "
                                            "the evidence, enable auto-merge. `queue`/`status` record the outcome.")] = None,
    merge_method: Annotated[str | None, typer.Option("--merge-method", help="With --via: merge (default), squash or rebase.")] = None,
    priority: Annotated[str, typer.Option("--priority", help="normal, or high: ahead of every normal entry of the merge queue (a hotfix).")] = "normal",
) -> None:
    """Land the approved task on the base branch through the merge queue: checks, one final gate per batch, compare-and-swap."""
    def action(layout: Layout) -> Result:
        if priority not in ("normal", "high"):
            raise BadInput(f"--priority {priority!r}: normal or high", next=[f"spark-git complete {task} --priority high"])
        if via is not None or merge_method is not None:
            if priority != "normal":
                raise BadInput("--priority orders the merge queue, not the forge's (--via)", next=[f"spark-git complete {task} --priority high"])
            return _complete_via(ctx, layout, task, via, merge_method, no_wait, rerun, session)
        notify = None if state(ctx).json else _to_stderr
        d = m.complete(layout, task, session=session_from(session), wait=not no_wait, notify=notify, rerun=rerun, ticker=ticker(ctx),
                       priority="high" if priority == "high" else "normal")
        if d.result == "queued":
            return Result(f"task {d.task} is in the merge queue ({d.queue_ref})", d, task=d.task, next=["spark-git queue"])

        def human(out: Out) -> None:
            if d.already_landed:
                out.print(f"  it had landed already (as {(d.landed_commit or '?')[:12]}); nothing was done")
                return
            how = f"one merge commit of the approved head {d.approved_sha[:12]}"
            out.print(f"  {d.base_branch}: {(d.old_base or '?')[:12]} → {(d.new_base or '?')[:12]} ({how})")
            if len(d.batch) > 1:
                out.print(f"  landed in a batch of {len(d.batch)}: {', '.join(d.batch)} (one final gate run)")
            gate_line(out, d.gate)
            if d.main_worktree_updated:
                out.print("  the main worktree was fast-forwarded too")

        return Result(f"task {d.task} landed on {d.base_branch} at {(d.new_base or '?')[:12]}", d, task=d.task, human=human, next=[f"spark-git cleanup {d.task}"])

    execute(ctx, action)


def _complete_via(ctx: typer.Context, layout: Layout, task: str, via: str | None, method: str | None, no_wait: bool, rerun: bool,
                  session: str | None) -> Result:
    if via is None or no_wait:
        raise BadInput("--merge-method goes with --via gh|glab" if via is None else "--enqueue goes with the merge queue, not with --via (the forge merges)")
    d = forge.complete_via(layout, task, via, session=session_from(session), method=method or "merge", rerun=rerun, ticker=ticker(ctx))

    def human(out: Out) -> None:
        out.print(f"  {d.task_branch} pushed to {d.remote} at {d.head[:12]}; {d.url} into {d.base_branch}, auto-merge ({d.method}) on")
        gate_line(out, d.gate)

    return Result(f"task {d.task}: {d.url} opened through {d.via}, auto-merge enabled", d, task=d.task, human=human,
                  next=["spark-git queue", f"spark-git status {d.task}"])


def _to_stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)
