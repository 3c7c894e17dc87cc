"""`approve`: the human's decision on a task's changes or plan. What `approve --changes` approves is
drawn (ops/landing/presented.py) and the human asked with a rich prompt. The question stays "type
the task name": a reflexive `y` must not land a task."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from spark_git.cli.common import Out, Result, SessionOpt, _esc, console, execute
from spark_git.cli.root import app
from spark_git.core.errors import BadInput
from spark_git.core.layout import Layout
from spark_git.ops.landing import approvals
from spark_git.ops.landing.presented import Presented
from spark_git.state.locks import session_from

TaskArg = Annotated[str, typer.Argument(help="Task name.")]


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
            interactive=sys.stdin.isatty(), ask=ask_on_terminal, show=show_on_terminal, show_plan=show_plan_on_terminal,
        )
        if plan:
            return Result(f"approved the plan of {d.task} ({d.via}, by {d.approved_by}){_signed(d)}", d, task=d.task, next=[f"spark-git advance {d.task}"])
        view = d.presented if d.via != "terminal" else None  # on a terminal it was drawn before the question
        # `--sha` of an older commit: `complete` lands the task head, which this approval does not cover
        nxt = f"spark-git complete {d.task}" if d.commit_sha == d.task_head else f"spark-git status {d.task}"
        return Result(f"approved the changes of {d.task} at {d.commit_sha[:12]} ({d.via}, by {d.approved_by}){_signed(d)}", d, task=d.task,
                      next=[nxt], human=(lambda out: draw(out, view)) if view is not None else None)

    execute(ctx, action)


def _signed(d: approvals.ApproveData) -> str:
    """Where the signing key is, said plainly the first time (approve created it, or recorded it as an
    approver), and every client whose agents nothing keeps from it."""
    said = ""
    if d.key_created:
        said = f"; signed with a new key created at {d.signed_with} (no user.signingkey configured), its public key recorded in {d.allowed_signers}"
    elif d.allowed_signers:
        said = f"; signed with {d.signed_with}, now an allowed approver in {d.allowed_signers}"
    if d.unprotected_key:
        said += f"; UNPROTECTED KEY: {d.signed_with} has no passphrase ([approval] unprotected_key = true), any process of this user could have signed"
    return said + "".join(f"; NOT GUARANTEED: {u}" for u in d.unguarded)


MAX_FILES = 40  # a longer diffstat ends with a count: the full list is `git diff --stat BASE HEAD`
BAR = 24  # width of the +/- bar of the largest change


def draw(out: Out, v: Presented) -> None:
    """The commits, the diffstat against the base, the last gate results, the reviewers' decisions
    and the open flags, in that order; fits 80 columns apart from long paths and subjects."""
    n = len(v.commits)
    out.print(f"  [bold]{n} commit{'s' if n != 1 else ''}[/bold] on {_esc(v.base_branch)} {v.base[:12]}..{v.commit_sha[:12]}:")
    width = max((len(c.agent or "?") for c in v.commits), default=1)
    for c in v.commits:
        out.print(f"    {c.sha[:12]}  [cyan]{_esc((c.agent or '?').ljust(width))}[/cyan]  {_esc(c.subject)}")
    _diffstat(out, v)
    out.print("  [bold]gates[/bold] (last run):" if v.gates else "  [bold]gates[/bold]: none ran")
    for g in v.gates:
        where = "this commit" if g.on_this_commit else (g.commit or "?")[:12]
        mark = "[green]passed[/green]" if g.result == "passed" else f"[red]{_esc(g.result)}[/red]"
        out.print(f"    {g.gate:<6} {mark} on {where}" + (f", merge of {_esc(g.agent)}" if g.agent else "") + (f", {g.at[:19]}" if g.at else ""))
    out.print("  [bold]reviewers[/bold]:" if v.reviewers else "  [bold]reviewers[/bold]: none in this task")
    for r in v.reviewers:
        said = r.decision or r.status or "never reported"
        on = "" if not r.reviewed else " for this commit" if r.current else f" for {r.reviewed[:12]}"
        out.print(f"    {_esc(r.agent)}: {_esc(said)}{on}" + (f" — {_esc(r.feedback)}" if r.feedback else ""))
    if not v.flags:
        out.print("  [bold]open flags[/bold]: none")
    for f in v.flags:
        out.print(f"  [yellow]flag:[/yellow] {_esc(f)}")


def _diffstat(out: Out, v: Presented) -> None:
    n = len(v.files)
    out.print(f"  [bold]{n} file{'s' if n != 1 else ''} changed[/bold], {v.added} insertion(s)(+), {v.removed} deletion(s)(-) against {v.base[:12]}:")
    shown = v.files[:MAX_FILES]
    pw = min(40, max((len(f.path) for f in shown), default=0))
    most = max(((f.added or 0) + (f.removed or 0) for f in shown), default=0) or 1
    for f in shown:
        path = f.path if len(f.path) <= pw else "…" + f.path[-(pw - 1):]
        if f.added is None:
            out.print(f"    {_esc(path.ljust(pw))} | Bin")
            continue
        total = f.added + (f.removed or 0)
        plus, minus = (_scaled(f.added, most), _scaled(f.removed or 0, most)) if most > BAR else (f.added, f.removed or 0)
        out.print(f"    {_esc(path.ljust(pw))} | {total:>4} [green]{'+' * plus}[/green][red]{'-' * minus}[/red]")
    if n > MAX_FILES:
        out.print(f"    … and {n - MAX_FILES} more: git diff --stat {v.base[:12]} {v.commit_sha[:12]}")


def _scaled(n: int, most: int) -> int:
    return max(1, round(n * BAR / most)) if n else 0  # a changed file always shows a mark


def show_on_terminal(v: Presented, title: str = "What you approve") -> None:
    err = console(stderr=True)  # stdout stays for the result (one JSON object with --json)
    err.print(f"[bold]{title}[/bold]: the changes of task {_esc(v.task)} at {v.commit_sha[:12]}")
    draw(err, v)


def show_plan_on_terminal(text: str) -> None:
    """The plan the human approves, whole (task.md), on stderr before the question."""
    err = console(stderr=True)
    err.rule("The plan (task.md)")
    err.print(text.rstrip(), markup=False, highlight=False)
    err.rule()


def ask_on_terminal(prompt: str) -> str:
    from rich.prompt import Prompt

    try:
        return Prompt.ask(_esc(prompt.rstrip().removesuffix(":")), console=console(stderr=True))
    except EOFError:  # the terminal closed: nothing typed, nothing approved
        return ""
