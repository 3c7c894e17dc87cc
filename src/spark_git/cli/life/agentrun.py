"""`agent run`: start an agent's client in its worktree, briefed, and file what it answers."""

from __future__ import annotations

from typing import Annotated

import typer

from spark_git.cli.common import Out, Result, execute
from spark_git.cli.life.start import agent_app
from spark_git.clients import registry
from spark_git.core.errors import FAIL, BadInput
from spark_git.core.layout import Layout


@agent_app.command("run")
def agent_run(
    ctx: typer.Context,
    task: Annotated[str, typer.Argument(help="Task name.")],
    agent: Annotated[str, typer.Argument(help="Agent name.")],
    client_args: Annotated[list[str] | None, typer.Argument(help="After `--`: more arguments for the client.", show_default=False)] = None,
    client: Annotated[str | None, typer.Option("--client", help=f"The client to start: {', '.join(registry.CLIENTS)} (default: the one whose hooks are installed).")] = None,
    headless: Annotated[bool, typer.Option("--headless", help="Non-interactive, machine-readable output; the final Output JSON becomes the agent's report (the default).")] = False,
    tmux: Annotated[bool, typer.Option("--tmux", help="The interactive client in a tmux window named TASK/AGENT (session `spark-git`, created when none is running).")] = False,
    prompt: Annotated[str | None, typer.Option("--prompt", help="What to tell the agent (default: its brief and the instruction to answer with the Output JSON).")] = None,
) -> None:
    """Start the agent's client in its worktree as that agent (its hooks and sandbox checked first); headless, its answer becomes its report."""
    def action(layout: Layout) -> Result:
        from spark_git.ops.agents import run as ops_run
        from spark_git.ops.shared import hooksetup

        if headless and tmux:
            raise BadInput("--headless and --tmux exclude each other", next=[f"spark-git agent run {task} {agent} --headless"])
        name = client or next((c.name for c in hooksetup.configured(hooksetup.root_of(layout))), registry.DEFAULT)
        if tmux:
            d = ops_run.in_tmux(layout, task, agent, name, prompt=prompt, extra=tuple(client_args or ()))
            return Result(f"agent {d.agent} of {d.task}: {d.client} in tmux window {d.window}", d, task=d.task,
                          human=lambda out: out.print(f"  watch it: tmux attach -t {ops_run.TMUX_SESSION}"), next=[f"spark-git status {d.task}"])
        d = ops_run.headless(layout, task, agent, name, prompt=prompt, extra=tuple(client_args or ()))

        def human(out: Out) -> None:
            cost = f", ${d.cost_usd:.4f}" if d.cost_usd is not None else ""
            out.print(f"  {d.client}: exit {d.exit_code} after {d.duration_s}s" + (f", {d.tokens} tokens" if d.tokens is not None else "") + cost)
            out.print(f"  log: {d.log}")
            if d.last_words:
                out.print(f"  last words: {d.last_words[-500:]}")

        if d.outcome == "reported":
            return Result(f"agent {d.agent} of {d.task} reported {d.report_status} ({d.client})", d, task=d.task, human=human,
                          next=[f"spark-git status {d.task}"])
        return Result(f"agent {d.agent} of {d.task}: the {d.client} run ended without an Output JSON (exit {d.exit_code})", d, task=d.task,
                      human=human, status="FAIL", exit_code=FAIL, next=[f"spark-git agent run {d.task} {d.agent} --client {d.client}"])

    execute(ctx, action)
