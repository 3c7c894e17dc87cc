"""`merge`, `sync`, `approve`, `complete`, `who`, `log` (gated-merge issue)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from shlex import quote
from typing import TYPE_CHECKING, Annotated

import typer

from spark_git.cli.common import Out, Result, SessionOpt, _esc, execute, gate_failure_lines, state, ticker
from spark_git.cli.root import app
from spark_git.core.errors import BadInput
from spark_git.core.layout import Layout
from spark_git.state.locks import session_from

if TYPE_CHECKING:
    from spark_git.gates.evidence import GateEvidence
    from spark_git.ops.merge import MergeAllData, MergeData

AgentOpt = Annotated[str, typer.Option("--agent", "-a", help="Agent name.")]
TaskArg = Annotated[str, typer.Argument(help="Task name.")]
RerunOpt = Annotated[bool, typer.Option("--rerun", help="Run the gate even if this tree already passed it (ignore its recorded verdict).")]

def _gate_line(out: Out, gate: GateEvidence | None) -> None:
    if gate is None:
        return
    if gate.reused_from:
        out.print(f"  gate {gate.gate}: passed — reused verdict of {gate.tree[:12]} from {_esc(gate.reused_from)} (--rerun runs it again)")
    elif not gate.ran:
        out.print(f"  gate {gate.gate}: none configured (nothing ran)")
    else:
        from spark_git.gates.reports import token  # with the evidence model already loaded: no start-up cost

        tests = f"  tests {gate.tests}" if gate.tests else ""
        parsed = f"  ({token(gate.reports)})" if gate.reports and token(gate.reports) else ""
        out.print(f"  gate {gate.gate}: {'passed' if gate.passed else 'FAILED'} in {gate.duration_s:.1f}s{tests}{parsed}  log {gate.log_path}")

def _merge_lines(out: Out, d: MergeData) -> None:
    out.print(f"  {d.task_branch}: {d.old_head[:12]} → {d.new_head[:12]}" + ("  (rebased)" if d.rebased else "") + (f"  ({d.stamped} commit(s) attributed)" if d.stamped else ""))
    for c in d.landed:
        out.print(f"  {c.sha[:12]} {_esc(c.subject)}")
    _gate_line(out, d.gate)
    for r in d.recovered:
        out.print(f"  [yellow]recovered:[/yellow] {r}")

@app.command()
def merge(
    ctx: typer.Context,
    task: TaskArg,
    agent: Annotated[str | None, typer.Option("--agent", "-a", help="Agent name.", show_default=False)] = None,
    all_: Annotated[bool, typer.Option("--all", help="Every agent of the task in turn (one process; a refused agent does not stop the others and is tried again once others landed).")] = False,
    rerun: RerunOpt = False,
    session: SessionOpt = None,
) -> None:
    """Land an agent's branch on the task branch: clean tree, attribution, rebase, build gate, fast-forward."""
    from spark_git.ops import merge as m

    def action(layout: Layout) -> Result:
        if (agent is None) == (not all_):
            raise BadInput("give exactly one of --agent NAME or --all", next=[f"spark-git merge {task} --agent NAME", f"spark-git merge {task} --all"])
        if all_:
            return _merge_all_result(m.merge_all(layout, task, session=session_from(session), rerun=rerun, ticker=ticker(ctx), warn=_warner(ctx)))
        assert agent is not None  # exactly one of --agent/--all, checked above
        d = m.merge(layout, task, agent, session=session_from(session), rerun=rerun, ticker=ticker(ctx), warn=_warner(ctx))
        if not d.landed:
            return Result(f"{d.agent} has nothing new for {d.task}; nothing changed", d, task=d.task)
        return Result(f"merged {len(d.landed)} commit(s) of {d.agent} into {d.task}", d, task=d.task, human=lambda out: _merge_lines(out, d))

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
            gate_failure_lines(out, {**r.details, "log_tail": (r.details.get("log_tail") or [])[-5:]}, tail=5)
            if r.hint:
                out.print(f"    [dim]hint:[/] {_esc(r.hint)}")

    second = sum(1 for x in landed if x.second_pass)
    summary = f"merged {len(landed)} agent(s) into {d.task}" + (f" ({second} on the second pass)" if second else "") + f", {len(d.merged) - len(landed)} with nothing new"
    if not d.refused:
        return Result(summary, d, task=d.task, human=human)
    first = d.refused[0]
    return Result(f"{summary}; {len(d.refused)} refused: {', '.join(r.agent for r in d.refused)}", d, task=d.task, human=human,
                  status=first.status, exit_code=first.exit_code, next=[c for r in d.refused for c in (r.next or [f"spark-git merge {d.task} --agent {r.agent}"])])

@app.command()
def sync(ctx: typer.Context, task: TaskArg, agent: AgentOpt, session: SessionOpt = None) -> None:
    """Rebase an agent's branch onto the task branch; conflicts are left for the agent to resolve."""
    from spark_git.ops import sync as m

    def action(layout: Layout) -> Result:
        d = m.sync(layout, task, agent, session=session_from(session))
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
    from spark_git.ops import update as m

    def action(layout: Layout) -> Result:
        d = m.update(layout, task, session=session_from(session), leave_conflict=leave_conflict)
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
            for a in d.agents:
                out.print(f"  {a.agent}: " + (f"moved to {(a.new_head or '?')[:12]}" if a.moved else f"left alone: {a.why_not}"))
            for r in d.recovered:
                out.print(f"  [yellow]recovered:[/yellow] {r}")

        what = f"rebased onto {d.base_branch} at {d.base_head[:12]}" if d.rebased or d.resolved else f"already contains {d.base_branch} at {d.base_head[:12]}"
        return Result(f"{d.task} {what}", d, task=d.task, human=human, next=[m.next_step(layout, d)])

    execute(ctx, action)

@app.command()
def approve(
    ctx: typer.Context,
    task: TaskArg,
    changes: Annotated[bool, typer.Option("--changes", help="Approve the task's changes (its head, or --sha).")] = False,
    plan: Annotated[bool, typer.Option("--plan", help="Approve the task's plan (task.md, in SYNTHESIS).")] = False,
    request_changes: Annotated[bool, typer.Option("--request-changes", help="Send the changes back to IMPLEMENTATION (needs --why); with --plan: reject the plan.")] = False,
    why: Annotated[str | None, typer.Option("--why", help="The reason for --request-changes.")] = None,
    sha: Annotated[str | None, typer.Option("--sha", help="Commit to approve (default: the task head).")] = None,
    session: SessionOpt = None,
) -> None:
    """Record the human's approval of the task's changes (bound to a commit and its patch), or send them back. Asks on a terminal."""
    from spark_git.cli.presented import ask_on_terminal, draw, show_on_terminal
    from spark_git.ops import approvals

    def action(layout: Layout) -> Result:
        if changes + plan + request_changes != 1 and not (plan and request_changes and not changes):
            raise BadInput("say what you decide: --changes, --plan, --request-changes --why '...' or --plan --request-changes --why '...'")
        if plan and request_changes:
            pr = approvals.reject_plan(layout, task, why=why or "", session=session_from(session), interactive=sys.stdin.isatty(), ask=ask_on_terminal)
            return Result(f"plan of {pr.task} rejected ({pr.via}, by {pr.rejected_by}): revise task.md, then approve it", pr, task=pr.task,
                          next=[f"spark-git approve {pr.task} --plan"])
        if request_changes:
            if not (why or "").strip():
                raise BadInput("--request-changes needs --why '...'", next=[f"spark-git approve {task} --request-changes --why '...'"])
            r = approvals.request_changes(layout, task, why=why or "", sha=sha, session=session_from(session),
                                          interactive=sys.stdin.isatty(), ask=ask_on_terminal,
                                          show=lambda v: show_on_terminal(v, "What you send back"))
            return Result(f"changes requested for {r.task} at {r.commit_sha[:12]}: back to {r.to} ({r.via}, by {r.requested_by})", r, task=r.task,
                          next=[f"spark-git status {r.task}"])
        d = approvals.approve(
            layout, task, kind="plan" if plan else "changes", sha=sha, session=session_from(session),
            interactive=sys.stdin.isatty(), ask=ask_on_terminal, show=show_on_terminal,
        )
        if plan:
            return Result(f"approved the plan of {d.task} ({d.via}, by {d.approved_by})", d, task=d.task, next=[f"spark-git advance {d.task}"])
        view = d.presented if d.via != "terminal" else None  # on a terminal it was drawn before the question
        # `--sha` of an older commit: `complete` lands the task head, which this approval does not cover
        nxt = f"spark-git complete {d.task}" if d.commit_sha == d.task_head else f"spark-git status {d.task}"
        return Result(f"approved the changes of {d.task} at {d.commit_sha[:12]} ({d.via}, by {d.approved_by})", d, task=d.task,
                      next=[nxt], human=(lambda out: draw(out, view)) if view is not None else None)

    execute(ctx, action)

@app.command()
def complete(
    ctx: typer.Context,
    task: TaskArg,
    no_wait: Annotated[bool, typer.Option("--no-wait", help="Return once the task is in the merge queue.")] = False,
    rerun: RerunOpt = False,
    session: SessionOpt = None,
    via: Annotated[str | None, typer.Option("--via", help="Land through the forge instead (gh or glab): push the task branch, open the PR/MR with "
                                            "the evidence, enable auto-merge. `queue`/`status` record the outcome.")] = None,
    merge_method: Annotated[str | None, typer.Option("--merge-method", help="With --via: merge (default), squash or rebase.")] = None,
) -> None:
    """Land the approved task on the base branch through the merge queue: checks, one final gate per batch, compare-and-swap."""
    from spark_git.ops import complete as m

    def action(layout: Layout) -> Result:
        if via is not None or merge_method is not None:
            return _complete_via(ctx, layout, task, via, merge_method, no_wait, rerun, session)
        notify = None if state(ctx).json else _to_stderr
        d = m.complete(layout, task, session=session_from(session), wait=not no_wait, notify=notify, rerun=rerun, ticker=ticker(ctx))
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
            _gate_line(out, d.gate)
            if d.main_worktree_updated:
                out.print("  the main worktree was fast-forwarded too")

        return Result(f"task {d.task} landed on {d.base_branch} at {(d.new_base or '?')[:12]}", d, task=d.task, human=human, next=[f"spark-git cleanup {d.task}"])

    execute(ctx, action)

def _complete_via(ctx: typer.Context, layout: Layout, task: str, via: str | None, method: str | None, no_wait: bool, rerun: bool,
                  session: str | None) -> Result:
    from spark_git.ops import forge

    if via is None or no_wait:
        raise BadInput("--merge-method goes with --via gh|glab" if via is None else "--no-wait goes with the merge queue, not with --via (the forge merges)")
    d = forge.complete_via(layout, task, via, session=session_from(session), method=method or "merge", rerun=rerun, ticker=ticker(ctx))

    def human(out: Out) -> None:
        out.print(f"  {d.task_branch} pushed to {d.remote} at {d.head[:12]}; {d.url} into {d.base_branch}, auto-merge ({d.method}) on")
        _gate_line(out, d.gate)

    return Result(f"task {d.task}: {d.url} opened through {d.via}, auto-merge enabled", d, task=d.task, human=human,
                  next=["spark-git queue", f"spark-git status {d.task}"])


def _to_stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)

@app.command()
def who(ctx: typer.Context, task: TaskArg) -> None:
    """Who wrote what on the task branch: commits, files and lines per agent."""
    from spark_git.ops import history

    def action(layout: Layout) -> Result:
        d = history.who(layout, task)

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
    from spark_git.ops import history

    def action(layout: Layout) -> Result:
        d = history.log(layout, task)

        def human(out: Out) -> None:
            for c in d.commits:
                marks = []
                for g in c.gates:
                    marks.append(f"gate {g.get('gate')} {'passed' if g.get('passed') else 'failed'}")
                for a in c.approvals:
                    marks.append(f"approved by {a.get('by')}")
                out.print(f"  {c.sha[:12]} [cyan]{_esc(c.agent or '?')}[/cyan] {_esc(c.subject)}" + (f"  [dim]({_esc('; '.join(marks))})[/dim]" if marks else ""))

        return Result(f"{len(d.commits)} commit(s) on {d.task_branch} beyond the base", d, task=d.task, human=human)

    execute(ctx, action)
