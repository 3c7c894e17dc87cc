"""`hook …`: what agent clients run from their settings files (pre-tool-use, session-start,
worktree-create, worktree-remove); `hooks install` (cli/setup/hooks.py) writes those entries."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from spark_git.cli.common import Result, execute, or_list, state
from spark_git.cli.root import app
from spark_git.clients import registry
from spark_git.core.layout import Layout

_NAMES = or_list(list(registry.CLIENTS))
hook_app = typer.Typer(help="Agent-client hook commands (read the hook's JSON event on stdin).", no_args_is_help=True)
app.add_typer(hook_app, name="hook", hidden=True)  # the clients' entry points (cli/root.py HIDDEN)


ClientOpt = Annotated[str, typer.Option("--client", help=f"The client running the hook: {_NAMES}.")]


def _stdin_event() -> dict[str, Any]:
    if sys.stdin is None or sys.stdin.isatty():
        return {}
    raw = sys.stdin.read()
    try:
        ev = json.loads(raw) if raw.strip() else {}
    except ValueError:
        return {}
    return ev if isinstance(ev, dict) else {}


def _sessions(event: dict[str, Any]) -> set[str]:
    return {s for s in (event.get("session_id"), os.environ.get("SPARK_SESSION_ID")) if isinstance(s, str) and s}


def _client(name: str) -> str:
    from spark_git.core.errors import BadInput

    if name not in registry.CLIENTS:
        raise BadInput(f"unknown --client {name!r}: use {', '.join(registry.CLIENTS)}")
    return name


@hook_app.command("pre-tool-use")
def hook_pre_tool_use(client: ClientOpt = registry.DEFAULT) -> None:
    """Allow (exit 0) or block (exit 2, reason on stderr) a file write or shell command of the client.
    (Normally answered by the fast path in __main__ without loading this app.)"""
    from spark_git.clients.hooks import main

    rc = main(["pre-tool-use", "--client", client])
    if rc < 0:
        sys.stderr.write(f"spark-git hook pre-tool-use: unknown --client {client!r}\n")
        rc = 2
    raise typer.Exit(rc)


@hook_app.command("session-start")
def hook_session_start(ctx: typer.Context, client: ClientOpt = registry.DEFAULT) -> None:
    """Checkpoint recovery: the tasks this session owns, their state, what they wait for, next commands."""
    from spark_git.clients import checkpoint
    from spark_git.core.errors import BadInput
    from spark_git.state.backends import open_store

    st = state(ctx)
    event = _stdin_event()
    sessions = _sessions(event)
    cwd = Path(event["cwd"]) if isinstance(event.get("cwd"), str) else st.cwd
    checkpoint.remember_launch(event.get("session_id"), cwd)  # the hook judges the session by where it started

    def action(_: Layout | None) -> Result:
        adapter = registry.get(_client(client))
        try:
            layout = Layout.discover(cwd)
        except BadInput:
            layout = None  # not a git repo: nothing to say
        me = checkpoint.agent_of(layout, event.get("session_id"), cwd) if layout is not None and layout.tasks_root.is_dir() else None
        if layout is None or not layout.tasks_root.is_dir():
            d = checkpoint.SessionStartData(sessions=sorted(sessions), tasks=[])
        elif me is not None:  # an agent is told who it is, never the owner's tasks
            d = checkpoint.for_agent(layout, open_store(layout), sessions, *me)
        else:
            d = checkpoint.collect(layout, open_store(layout), sessions)
        if not st.json:
            text = adapter.session_start(d)
            if text:
                print(text)
            raise typer.Exit(0)
        if d.agent is not None:
            return Result(f"agent {d.agent.agent} of task {d.agent.task}", d, task=d.agent.task)
        return Result(f"{len(d.tasks)} task(s) owned by session {', '.join(d.sessions) or '(none given)'}", d)

    execute(ctx, action, needs_repo=False)


@hook_app.command("worktree-create")
def hook_worktree_create(ctx: typer.Context, client: ClientOpt = registry.DEFAULT) -> None:
    """WorktreeCreate ({name} on stdin): a spark-git agent worktree of the session's task (a plain git
    worktree under the tasks root outside any task); prints its path."""
    from spark_git.ops.life import wthooks  # lazy: `hook session-start` runs at every agent session and needs none of it

    st = state(ctx)
    event = _stdin_event()
    cwd = Path(event["cwd"]) if isinstance(event.get("cwd"), str) else st.cwd
    st.cwd = cwd
    raw = event.get("name")
    name = raw if isinstance(raw, str) else ""
    sid = event.get("session_id") if isinstance(event.get("session_id"), str) else os.environ.get("SPARK_SESSION_ID")

    def action(layout: Layout) -> Result:
        d = wthooks.create(layout, name, session=sid, sessions=_sessions(event), cwd=cwd, client=_client(client))
        if not st.json:
            if d.note:
                sys.stderr.write(f"spark-git: {d.note}\n")
            print(d.path)  # the client reads the worktree's path from stdout, and nothing else
            raise typer.Exit(0)
        what = f"agent {d.agent} of task {d.task}" if d.task else "plain worktree"
        return Result(f"{what} at {d.path} ({d.action})", d, task=d.task)

    execute(ctx, action)


@hook_app.command("worktree-remove")
def hook_worktree_remove(ctx: typer.Context, client: ClientOpt = registry.DEFAULT) -> None:
    """WorktreeRemove ({worktree_path} on stdin): archive its uncommitted work, then remove it (an agent
    worktree of a task stays until `cleanup`)."""
    from spark_git.ops.life import wthooks  # lazy: `hook session-start` runs at every agent session and needs none of it

    st = state(ctx)
    event = _stdin_event()
    raw = event.get("worktree_path")
    cwd = Path(event["cwd"]) if isinstance(event.get("cwd"), str) else st.cwd
    target = Path(raw) if isinstance(raw, str) and raw else None
    st.cwd = target if target is not None and target.is_dir() else cwd
    sid = event.get("session_id") if isinstance(event.get("session_id"), str) else os.environ.get("SPARK_SESSION_ID")

    def action(layout: Layout) -> Result:
        from spark_git.core.errors import BadInput

        _client(client)
        if target is None:
            raise BadInput("worktree-remove: the event has no worktree_path")
        d = wthooks.remove(layout, target, session=sid)
        if not st.json:
            for a in d.archived:
                sys.stderr.write(f"spark-git: archived {a.what} as {a.ref}\n")
            if d.note:
                sys.stderr.write(f"spark-git: {d.note}\n")
            raise typer.Exit(0)
        return Result(f"{d.path}: {d.action}", d, task=d.task)

    execute(ctx, action)
