"""`merge`, `sync`, `update`: an agent's work onto the task branch, an agent's branch onto it, the task onto its base."""

from __future__ import annotations

import sys
from collections.abc import Callable
from shlex import quote
from typing import TYPE_CHECKING, Annotated

import typer

from spark_git.cli.common import AgentOpt, Out, Result, SessionOpt, TaskArg, _esc, combined_lines, complete_agent, execute, gate_failure_lines, gate_line, state, ticker
from spark_git.cli.root import app
from spark_git.core.errors import BadInput
from spark_git.core.layout import Layout
from spark_git.ops.landing import merge as merging
from spark_git.ops.landing.merge import MergeAllData, MergeData
from spark_git.state.backends import open_store
from spark_git.state.locks import session_from

if TYPE_CHECKING:
    pass






RerunOpt = Annotated[bool, typer.Option("--rerun", help="Run the gate even if this tree already passed it (ignore its recorded verdict).")]


def _merge_lines(out: Out, d: MergeData) -> None:
    out.print(f"  {d.task_branch}: {d.old_head[:12]} → {d.new_head[:12]}" + ("  (rebased)" if d.rebased else "") + (f"  ({d.stamped} commit(s) attributed)" if d.stamped else ""))
    for c in d.landed:
        out.print(f"  {c.sha[:12]} {_esc(c.subject)}")
    gate_line(out, d.gate)
    for r in d.recovered:
        out.print(f"  [yellow]recovered:[/yellow] {r}")


@app.command()
def merge(
    ctx: typer.Context,
    task: TaskArg,
    agent: Annotated[str | None, typer.Option("--agent", "-a", help="Agent name.", show_default=False, autocompletion=complete_agent)] = None,
    all_: Annotated[bool, typer.Option("--all", help="Every agent of the task in turn (one process; a refused agent does not stop the others and is tried again once others landed).")] = False,
    rerun: RerunOpt = False,
    session: SessionOpt = None,
) -> None:
    """Land an agent's branch on the task branch: clean tree, attribution, rebase, build gate, fast-forward."""
    def action(layout: Layout) -> Result:
        if (agent is None) == (not all_):
            raise BadInput("give exactly one of --agent NAME or --all", next=[*(f"spark-git merge {task} --agent {a}" for a in _agents(layout, task)),
                                                                              f"spark-git merge {task} --all"])
        if all_:
            return _merge_all_result(merging.merge_all(layout, task, session=session_from(session), rerun=rerun, ticker=ticker(ctx), warn=_warner(ctx)))
        assert agent is not None  # exactly one of --agent/--all, checked above
        d = merging.merge(layout, task, agent, session=session_from(session), rerun=rerun, ticker=ticker(ctx), warn=_warner(ctx))
        if not d.landed:
            return Result(f"{d.agent} has nothing new for {d.task}; nothing changed", d, task=d.task)
        return Result(f"merged {len(d.landed)} commit(s) of {d.agent} into {d.task}", d, task=d.task, human=lambda out: _merge_lines(out, d),
                      next=d.then)

    execute(ctx, action)


def _warner(ctx: typer.Context) -> Callable[[str], None] | None:
    """Warnings on stderr as they happen (before a long gate), terminal or not; under --json the
    result's data carries them instead."""
    if state(ctx).json:
        return None
    return lambda msg: print(f"warning: {msg}", file=sys.stderr, flush=True)


def _conflict_lines(out: Out, files: list[str]) -> None:
    for f in files:
        out.print(f"  conflict: {_esc(f)}")
    # the prose the `next` commands leave out; GIT_EDITOR=true: an agent cannot use the editor git opens
    out.print("  [dim]hint:[/] edit the conflicting files and `git add` them, then continue the rebase")


def _merge_all_result(d: MergeAllData) -> Result:
    landed = [x for x in d.merged if x.landed]

    def human(out: Out) -> None:
        for x in d.merged:
            if x.landed:
                again = f" — landed on the second pass, after {', '.join(x.landed_after)}" if x.second_pass else ""
                out.print(f"  [green]✓[/green] {x.agent}: {len(x.landed)} commit(s){again}")
                if x.first_refusal:
                    out.print(f"    [dim]first pass (merge order):[/] {_esc(x.first_refusal)}")
                _merge_lines(out, x)
            else:
                out.print(f"  · {x.agent}: nothing new")
        for r in d.refused:
            out.print(f"  [red]✗[/red] {r.agent}: {_esc(r.error)}" + (" (refused again on the second pass, after the others landed: not a matter of merge order)" if r.passes > 1 else ""))
            for f in (r.details.get("files") or [])[:10]:  # a dirty worktree: which files
                out.print(f"      {_esc(str(f))}")
            if "log_tail" in r.details:  # only a gate that ran has output to show
                gate_failure_lines(out, {**r.details, "log_tail": (r.details.get("log_tail") or [])[-5:]}, tail=5)
            if r.hint:
                out.print(f"    [dim]hint:[/] {_esc(r.hint)}")

    second = sum(1 for x in landed if x.second_pass)
    summary = f"merged {len(landed)} agent(s) into {d.task}" + (f" ({second} on the second pass)" if second else "") + f", {len(d.merged) - len(landed)} with nothing new"
    if not d.refused:
        return Result(summary, d, task=d.task, human=human, next=d.then)
    first = d.refused[0]
    return Result(f"{summary}; {len(d.refused)} refused: {', '.join(r.agent for r in d.refused)}", d, task=d.task, human=human,
                  status=first.status, exit_code=first.exit_code, next=[c for r in d.refused for c in (r.next or [f"spark-git merge {d.task} --agent {r.agent}"])])


@app.command()
def sync(ctx: typer.Context, task: TaskArg, agent: AgentOpt, session: SessionOpt = None) -> None:
    """Rebase an agent's branch onto the task branch; conflicts are left for the agent to resolve."""
    def action(layout: Layout) -> Result:
        from spark_git.ops.landing import sync as syncing  # here: merge, the path that counts, does not load it

        d = syncing.sync(layout, task, agent, session=session_from(session))
        if d.conflicts:
            wt = layout.agent_worktree(d.task, d.agent)
            return Result(
                f"{d.agent} rebased onto {d.task_head[:12]} with conflicts in {len(d.conflicts)} file(s): resolve them in {wt}",
                d, task=d.task, status="BLOCKED", exit_code=3,
                next=[f"cd {quote(str(wt))}", "git status", "GIT_EDITOR=true git rebase --continue", f"spark-git merge {d.task} --agent {d.agent}"],
                human=lambda out: _conflict_lines(out, d.conflicts),
            )
        if not d.rebased:
            return Result(f"{d.agent} already contains the task head {d.task_head[:12]}; nothing changed", d, task=d.task)
        return Result(f"{d.agent} rebased onto the task head {d.task_head[:12]}", d, task=d.task, next=[f"spark-git merge {d.task} --agent {d.agent}"])

    execute(ctx, action)


@app.command()
def update(
    ctx: typer.Context,
    task: TaskArg,
    leave_conflict: Annotated[bool, typer.Option("--leave-conflict", help="On a conflict, leave the rebase in the task worktree to resolve.")] = False,
    session: SessionOpt = None,
) -> None:
    """Rebase the task onto its base branch and bring agents without unmerged work along; approvals of an unchanged patch are kept."""
    def action(layout: Layout) -> Result:
        from spark_git.ops.landing import update as updating  # here: merge, the path that counts, does not load it

        store = open_store(layout)  # one Store for the update and the next step it names
        d = updating.update(layout, store, task, session=session_from(session), leave_conflict=leave_conflict)
        if d.conflicts:
            wt = layout.task_worktree(d.task)
            return Result(
                f"{d.task} stopped rebasing onto {d.base_branch} with conflicts in {len(d.conflicts)} file(s): resolve them in {wt}",
                d, task=d.task, status="BLOCKED", exit_code=3,
                next=[f"cd {quote(str(wt))}", "git status", "GIT_EDITOR=true git rebase --continue", f"spark-git update {d.task}"],
                human=lambda out: _conflict_lines(out, d.conflicts),
            )

        def human(out: Out) -> None:
            if d.rebased or d.resolved:
                how = "the rebase you finished after the conflict; " if d.resolved else ""
                out.print(f"  {d.task}: {d.old_head[:12]} → {d.new_head[:12]} (on {d.base_branch} {d.base_head[:12]}; {how}old head kept as {d.archive_ref})")
            if d.approval != "none":
                out.print(f"  approval: {d.approval}: {d.approval_why}")
            combined_lines(out, d.combined)
            for a in d.agents:
                out.print(f"  {a.agent}: " + (f"moved to {(a.new_head or '?')[:12]}" if a.moved else f"left alone: {a.why_not}"))
            for r in d.recovered:
                out.print(f"  [yellow]recovered:[/yellow] {r}")

        what = f"rebased onto {d.base_branch} at {d.base_head[:12]}" if d.rebased or d.resolved else f"already contains {d.base_branch} at {d.base_head[:12]}"
        return Result(f"{d.task} {what}", d, task=d.task, human=human, next=[updating.next_step(store, d)])

    execute(ctx, action)


def _agents(layout: Layout, task: str) -> list[str]:
    """The task's agents, for pasteable `next`s (none when the task cannot be read)."""
    from spark_git.core.errors import SparkError
    from spark_git.state.backends import open_store

    try:
        tf = open_store(layout).read_task(task)
    except SparkError:
        return []
    return sorted(tf.agents) if tf else []
