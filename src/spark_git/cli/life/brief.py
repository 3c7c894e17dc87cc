"""`brief`: what an agent is told about its task, its role and the next step."""

from __future__ import annotations

from typing import Annotated

import typer

from spark_git.cli.common import Result, TaskArg, complete_agent, execute, state
from spark_git.cli.root import app
from spark_git.core.layout import Layout
from spark_git.ops.life import brief as ops_brief
from spark_git.state.backends import open_store


@app.command()
def brief(
    ctx: typer.Context,
    task: TaskArg,
    agent: Annotated[str, typer.Option("--agent", "-a", help="The agent to dispatch.", autocompletion=complete_agent)],
) -> None:
    """Print the agent's Universal Input JSON (seed 004): goal, non-goals, context files, changed files, checks, risk flags."""
    import json

    def action(layout: Layout) -> Result:
        d = ops_brief.brief(layout, open_store(layout), task, agent)
        if not state(ctx).json:  # the Input JSON itself, to hand to the sub-agent as-is
            print(json.dumps(d.model_dump(mode="json"), indent=2))
            raise typer.Exit(0)
        return Result(f"brief for {d.agent} on {d.task.id} ({len(d.task.session_changed_files)} changed file(s))", d, task=d.task.id,
                      next=[f"spark-git report {d.task.id} --agent {d.agent} --status COMPLETE --evidence output.json"])  # output.json: the agent's Output JSON

    execute(ctx, action)
