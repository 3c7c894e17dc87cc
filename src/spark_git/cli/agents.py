"""`hook`, `hooks`, `env`, `schema` (real-agents issue)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from spark_git.cli.common import Result, execute, state
from spark_git.cli.root import app
from spark_git.core.layout import Layout

hook_app = typer.Typer(help="Claude Code hook commands (read the hook's JSON on stdin).", no_args_is_help=True)
hooks_app = typer.Typer(help="Install or remove spark-git's Claude Code hooks.", no_args_is_help=True)
app.add_typer(hook_app, name="hook")
app.add_typer(hooks_app, name="hooks")

ScopeOpt = Annotated[str, typer.Option("--scope", help="project (.claude/settings.json) or local (.claude/settings.local.json).")]


def _stdin_event() -> dict[str, Any]:
    if sys.stdin is None or sys.stdin.isatty():
        return {}
    raw = sys.stdin.read()
    try:
        ev = json.loads(raw) if raw.strip() else {}
    except ValueError:
        return {}
    return ev if isinstance(ev, dict) else {}


@hook_app.command("pre-tool-use")
def hook_pre_tool_use() -> None:
    """Allow (exit 0) or block (exit 2, reason on stderr) a Write/Edit/MultiEdit/NotebookEdit/Bash call.
    (Normally answered by the fast path in __main__ without loading this app.)"""
    from spark_git.clients.hooks import main

    raise typer.Exit(main(["pre-tool-use"]))


@hook_app.command("session-start")
def hook_session_start(ctx: typer.Context) -> None:
    """Checkpoint recovery: the tasks this session owns, their state, what they wait for, next commands."""
    import os
    from pathlib import Path

    from spark_git.clients import checkpoint, registry
    from spark_git.core.errors import BadInput

    st = state(ctx)
    event = _stdin_event()
    sessions = {s for s in (event.get("session_id"), os.environ.get("SPARK_SESSION_ID")) if isinstance(s, str) and s}
    cwd = Path(event["cwd"]) if isinstance(event.get("cwd"), str) else st.cwd
    checkpoint.remember_launch(event.get("session_id"), cwd)  # the hook judges the session by where it started

    def action(_: Layout | None) -> Result:
        try:
            layout = Layout.discover(cwd)
        except BadInput:
            layout = None  # not a git repo: nothing to say
        if layout is None or not layout.tasks_root.is_dir():
            d = checkpoint.SessionStartData(sessions=sorted(sessions), tasks=[])
        else:
            d = checkpoint.collect(layout, sessions)
        if not st.json:
            text = registry.get().session_start(d)
            if text:
                print(text)
            raise typer.Exit(0)
        return Result(f"{len(d.tasks)} task(s) owned by session {', '.join(d.sessions) or '(none given)'}", d)

    execute(ctx, action, needs_repo=False)


def _root(layout: Layout) -> Path:
    return layout.repo.toplevel or layout.main_worktree


@hooks_app.command("install")
def hooks_install(ctx: typer.Context, scope: ScopeOpt = "project") -> None:
    """Add spark-git's PreToolUse and SessionStart hooks to Claude Code's settings (merged, idempotent)."""
    from spark_git.clients import registry

    def action(layout: Layout) -> Result:
        d = registry.get().install(_root(layout), scope)
        verb = "installed in" if d.changed else "already in"
        return Result(f"spark-git hooks {verb} {d.path}", d, next=["spark-git hooks uninstall" + (" --scope local" if scope == "local" else "")])

    execute(ctx, action)


@hooks_app.command("uninstall")
def hooks_uninstall(ctx: typer.Context, scope: ScopeOpt = "project") -> None:
    """Remove only spark-git's entries from Claude Code's settings."""
    from spark_git.clients import registry

    def action(layout: Layout) -> Result:
        d = registry.get().uninstall(_root(layout), scope)
        return Result(f"spark-git hooks removed from {d.path}" if d.changed else f"no spark-git hooks in {d.path}", d)

    execute(ctx, action)


@app.command("env")
def env(
    ctx: typer.Context,
    task: Annotated[str, typer.Argument(help="Task name.")],
    agent: Annotated[str | None, typer.Option("--agent", help="The agent's worktree (default: the task worktree).")] = None,
    shell: Annotated[str, typer.Option("--shell", help="bash, fish or json.")] = "bash",
) -> None:
    """Print SPARK_TASK, SPARK_AGENT, SPARK_SESSION_ID, SPARK_WORKTREE, SPARK_TASK_WORKTREE and a unique
    SPARK_PORT for a worktree, e.g. `eval "$(spark-git env t1 --agent a1)"`."""
    from spark_git.ops import envs

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


@app.command("schema")
def schema(
    ctx: typer.Context,
    name: Annotated[str | None, typer.Argument(help="A command (\"start\", \"agent add\"), a file (\"task.json\"), \"config\", \"envelope\" or \"error\"; default: all.", show_default=False)] = None,
) -> None:
    """JSON Schema of each command's --json `data` and of each file spark-git writes."""
    from spark_git.ops import schema as mod

    def action(_: Layout | None) -> Result:
        d = mod.collect(name)
        if not state(ctx).json:
            print(json.dumps(d.schemas[name] if name else d.schemas, indent=2))
            raise typer.Exit(0)
        return Result(f"{len(d.names)} schema(s)", d)

    execute(ctx, action, needs_repo=False)
