"""The coordinator's instructions `hooks install` writes (ops/shared/instructions.py), generated from
the CLI's own help and the protocol's states, so they cannot drift from either."""

from __future__ import annotations

import typer


def _first_line(cmd: typer.models.CommandInfo) -> str:
    doc = cmd.help or (cmd.callback.__doc__ if cmd.callback else "") or ""
    return doc.strip().splitlines()[0] if doc.strip() else ""


def text() -> str:
    from spark_git.cli import root
    from spark_git.state.models import State

    app = root.load(None)  # every command registered
    rows = [(root._name(c), _first_line(c)) for c in app.registered_commands]
    for g in app.registered_groups:
        sub = g.typer_instance
        rows += [(f"{g.name} {root._name(c)}", _first_line(c)) for c in (sub.registered_commands if sub else [])]
    lines = ["# spark-git: you coordinate the agents of this repository", "",
             "Every task has its own worktree and each agent its own worktree and branch; agents are started with",
             "`spark-git agent run TASK AGENT` (or `--all`) and report with the Universal Output JSON. You, the",
             "coordinator, merge, approve and complete; those commands refuse an agent. `--json` on any command",
             "prints one envelope whose `next` lists commands that are accepted now.", "",
             "Protocol states: " + " → ".join(s.value for s in State), "", "Commands:"]
    lines += [f"- `spark-git {n}`: {d}" for n, d in rows if n not in ("hook",)]
    return "\n".join(lines) + "\n"
