"""`statusline`: the one-line summary for Claude Code's `statusLine` setting (issue 13). A bare
`spark-git statusline` never gets here (the fast path in __main__ answers it); this is `--json` and
`--help`."""

from __future__ import annotations

import json
import sys

import typer

from spark_git.cli.common import Result, execute, state
from spark_git.cli.root import app
from spark_git.ops.views import statusline as op


@app.command(hidden=True)  # Claude Code's statusLine runs it (cli/root.py HIDDEN)
def statusline(ctx: typer.Context) -> None:
    """One line for Claude Code's statusLine setting: task, agent, state, queue position, dirty, commits ahead (its JSON event on stdin)."""
    def action(_layout: object) -> Result:
        text = "" if sys.stdin.isatty() else sys.stdin.read()
        try:
            event = json.loads(text or "{}")
        except ValueError:
            event = {}
        d = op.collect(event if isinstance(event, dict) else {}, str(state(ctx).cwd))
        return Result(d.line or "not in a spark-git repository", d, task=d.task)

    execute(ctx, action, needs_repo=False)
