"""`start` and `agent add` (`abandon` lives in cli/ending/cleanup.py)."""

from __future__ import annotations

import shlex
from typing import Annotated

import typer

from spark_git.cli.common import Out, Result, SessionOpt, execute, progress, state
from spark_git.cli.life import agentrun
from spark_git.cli.root import app
from spark_git.core.layout import Layout
from spark_git.ops.life import agent_add as agent_add_op
from spark_git.ops.life import sources
from spark_git.ops.life import start as start_op
from spark_git.ops.shared.provision import ProvisionReport, failure_summary, failures
from spark_git.state.backends import open_store
from spark_git.state.locks import session_from

agent_app = typer.Typer(help="Manage the agents of a task.", no_args_is_help=True)


app.add_typer(agent_app, name="agent")


def _setup_failed(reports: list[ProvisionReport]) -> str | None:
    """The setup failure line (it names the log) when a post-create command failed. No retry hint in
    `next`: the setup command is not a spark-git command (data.provisioning[].failed has it)."""
    return (failure_summary(reports) + " — the worktree is kept") if failures(reports) else None


def _split(csv: str | None) -> list[str]:
    return [a.strip() for a in (csv or "").split(",") if a.strip()]


@app.command()
def start(
    ctx: typer.Context,
    task: Annotated[str | None, typer.Argument(help="Task name (derived from --title when omitted).", show_default=False)] = None,
    agents: Annotated[str | None, typer.Option("--agents", "-a", help="Comma-separated agent names (default: config default_agents); \"\" for none: the work is done in the task worktree.")] = None,
    base: Annotated[str | None, typer.Option("--base", help="Commit or branch to start from (default: the base branch).")] = None,
    title: Annotated[str | None, typer.Option("--title", help="Human title; also derives the task name when none is given.")] = None,
    session: SessionOpt = None,
    from_: Annotated[str | None, typer.Option("--from", help="Where the work is described: file, directory, #123, owner/repo#123, issue/PR URL, PROJ-123, URL or text; goes into task.md's objective.", show_default=False)] = None,
    no_setup: Annotated[bool, typer.Option("--no-setup", help="Skip the post-create setup commands (files are still copied).")] = False,
) -> None:
    """Claim a task: atomic lock, task branch + worktree, one worktree + branch per agent."""
    def action(layout: Layout) -> Result:
        names = _split(agents) if agents is not None else list(layout.config.default_agents)
        src = None
        if from_ is not None:
            src = sources.read(from_, state(ctx).cwd)  # before anything is created: a bad source changes nothing
        ttl = title or (src.title if src else None)
        d = start_op.start(layout, task, names, base=base, session=session_from(session), title=ttl, progress=progress(ctx), no_setup=no_setup)
        if src is not None and not d.resumed:
            sources.write_objective(layout.task_md(d.task), ttl or d.task, src)
        verb = "resumed" if d.resumed else "started"
        nxt = [f"cd {shlex.quote(str(d.task_worktree))}"]
        if d.session_minted:
            nxt.insert(0, d.export)
        from spark_git.ops.shared import loopstep

        nxt += [*loopstep.first_step(d.task, d.state, layout.config.protocol, agents=len(d.worktrees) > 1), f"spark-git status {d.task}"]

        def human(out: Out) -> None:
            out.print(f"  task worktree  {d.task_worktree}")
            for w in d.worktrees[1:]:
                out.print(f"  agent {w.agent:<14} {w.path}  [dim]({w.branch})[/dim]")
            out.print(f"  session        {d.session_id}" + ("  [yellow](new: export it)[/yellow]" if d.session_minted else ""))
            out.print(f"  base           {d.base_branch} @ {d.base_commit[:12]}   state {d.state}")
            from spark_git.cli import fit

            for warning in d.warnings:
                for ln in fit.wrap(f"⚠ {warning}", fit.width(), "  ", hang="  "):
                    out.print(ln, markup=False, highlight=False)

        failed = _setup_failed(d.provisioning)
        if failed:
            return Result(f"task {d.task} {verb} with {len(d.worktrees) - 1} agent(s), but {failed}", d, task=d.task, next=nxt, human=human, status="FAIL", exit_code=1)
        return Result(f"task {d.task} {verb} with {len(d.worktrees) - 1} agent(s)", d, task=d.task, next=nxt, human=human)

    execute(ctx, action)


@agent_app.command("add")
def agent_add(
    ctx: typer.Context,
    task: Annotated[str, typer.Argument(help="Task name.")],
    agent: Annotated[str, typer.Argument(help="Agent name.")],
    why: Annotated[str, typer.Option("--why", help="Justification, recorded in task.json.")],
    role: Annotated[str | None, typer.Option("--role", help="reviewer, updater or other (default: from the name).")] = None,
    session: SessionOpt = None,
    no_setup: Annotated[bool, typer.Option("--no-setup", help="Skip the post-create setup commands.")] = False,
) -> None:
    """Add an agent worktree + branch to a running task, from the current task head."""
    def action(layout: Layout) -> Result:
        from spark_git.protocol import agent_add_guard

        store = open_store(layout)
        d = agent_add_op.add_agent(layout, store, task, agent, why=why, session=session_from(session), role=role, progress=progress(ctx),
                                   guard=agent_add_guard(store), no_setup=no_setup)
        nxt = [f"cd {shlex.quote(str(d.worktree))}"]
        failed = _setup_failed(d.provisioning)
        if failed:
            return Result(f"agent {d.agent} added to {d.task} at {d.worktree}, but {failed}", d, task=d.task, next=nxt, status="FAIL", exit_code=1)
        return Result(f"agent {d.agent} added to {d.task} ({d.role}) at {d.worktree}", d, task=d.task, next=[f"cd {shlex.quote(str(d.worktree))}"])

    execute(ctx, action)


agentrun.register(agent_app)  # `agent run`, listed after `agent add`
