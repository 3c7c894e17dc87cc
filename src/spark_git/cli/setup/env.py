"""`env`: a worktree's SPARK_* variables for a shell."""

from __future__ import annotations

from typing import Annotated

import typer

from spark_git.cli.common import Result, TaskArg, complete_agent, execute, state
from spark_git.cli.root import app
from spark_git.core.layout import Layout
from spark_git.ops.setup import env as envs


@app.command("env")
def env(
    ctx: typer.Context,
    task: TaskArg,
    agent: Annotated[str | None, typer.Option("--agent", help="The agent's worktree (default: the task worktree).", autocompletion=complete_agent)] = None,
    shell: Annotated[str, typer.Option("--shell", help="bash, fish or json.")] = "bash",
) -> None:
    """Print SPARK_TASK, SPARK_AGENT, SPARK_SESSION_ID, SPARK_WORKTREE, SPARK_TASK_WORKTREE and a unique
    SPARK_PORT for a worktree, e.g. `eval "$(spark-git env t1 --agent a1)"`."""
    def action(layout: Layout) -> Result:
        if shell not in ("bash", "fish", "json"):
            from spark_git.core.errors import BadInput

            raise BadInput(f"bad --shell {shell!r}: use bash, fish or json")
        d = envs.env_data(layout, task, agent)
        if not state(ctx).json:
            print(envs.render(d.vars, shell))
            raise typer.Exit(0)
        return Result(f"environment of {d.worktree} (port {d.vars['SPARK_PORT']})", d, task=task)

    execute(ctx, action)
