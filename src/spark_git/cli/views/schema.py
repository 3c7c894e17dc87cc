"""`schema`: the JSON Schema of every command's `--json` data."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from spark_git.cli.common import Result, execute, state
from spark_git.cli.root import app
from spark_git.core.layout import Layout
from spark_git.ops.views import schema as mod


@app.command("schema")
def schema(
    ctx: typer.Context,
    name: Annotated[str | None, typer.Argument(help="A command (\"start\", \"agent add\"), a file (\"task.json\"), \"config\", \"envelope\" or \"error\"; default: all.", show_default=False)] = None,
) -> None:
    """JSON Schema of each command's --json `data` and of each file spark-git writes."""
    def action(_: Layout | None) -> Result:
        d = mod.collect(name)
        if not state(ctx).json:
            print(json.dumps(d.schemas[name] if name else d.schemas, indent=2))
            raise typer.Exit(0)
        return Result(f"{len(d.names)} schema(s)", d)

    execute(ctx, action, needs_repo=False)
