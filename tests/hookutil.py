"""Helpers for hook tests: Claude-Code-shaped events fed to the real CLI on stdin, and a way to put
a task into a protocol state before `spark-git advance` exists."""

from __future__ import annotations

import json
import os
from pathlib import Path

from fixtures.repo import Run, spark

# The protocol's forward path; walking it keeps transition_log consistent with the state.
FORWARD = ["INIT", "CLASSIFIED", "REQUIREMENTS", "SYNTHESIS", "IMPLEMENTATION"]


def event(cwd: Path, tool: str, session: str = "claude-session-1", **tool_input: str) -> dict:
    return {
        "session_id": session,
        "transcript_path": "/tmp/transcript.jsonl",
        "cwd": str(cwd),
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": tool_input,
    }


def hook(ev: dict, env: dict | None = None, sub: str = "pre-tool-use") -> Run:
    """The hook as the agent client runs it: a process, the event on stdin, in the event's cwd."""
    cwd = Path(str(ev.get("cwd")))
    return spark(cwd if cwd.is_dir() else None, "hook", sub, env=env, input=json.dumps(ev), timeout=60, process=True)


def put_in_state(repo: Path, task: str, target: str, session: str = "s1") -> None:
    """Moves `task` along FORWARD to `target` through protocol.record_transition under the task
    mutex, so task.json's transition_log (and the audit trail) stay consistent with its state.
    Replace with `spark-git advance` once the state-machine issue lands."""
    from spark_git.core.layout import Layout
    from spark_git.ops.shared import taskfile
    from spark_git.ops.shared.transitions import record_transition
    from spark_git.state.backends import open_store

    # The world's own user (sealed_env(<repo's parent>/home)) started the task: its records key MACs the log.
    home = repo.parent / "home" / ".local" / "state"
    before = os.environ.get("XDG_STATE_HOME")
    os.environ["XDG_STATE_HOME"] = str(home) if home.is_dir() else before or ""
    try:
        layout = Layout.discover(repo)
        store = open_store(layout)
        with taskfile.updating(store, task, session) as tf:
            i = FORWARD.index(tf.state)
            for to in FORWARD[i + 1 : FORWARD.index(target) + 1]:
                record_transition(store, tf, to, session, "test setup (no advance command yet)")
    finally:
        if before is None:
            os.environ.pop("XDG_STATE_HOME", None)
        else:
            os.environ["XDG_STATE_HOME"] = before


def run_cli(cwd: Path, *args: str, session: str | None = "s1", env: dict | None = None, input: str | None = None) -> Run:
    """The CLI in `cwd` (any repo, unlike conftest's `cli`), with SPARK_SESSION_ID=session."""
    e = dict(os.environ)
    if session is not None:
        e["SPARK_SESSION_ID"] = session
    e.update(env or {})
    return spark(cwd, *args, env=e, input=input)


EVENTS = Path(__file__).parent / "data" / "client-events"


def client_event(name: str, **subs: str) -> dict:
    """tests/data/client-events/<name>.json with each `{KEY}` in its strings replaced by subs[KEY]."""

    def fill(v: object) -> object:
        if isinstance(v, str):
            for k, s in subs.items():
                v = v.replace("{" + k + "}", s)
            return v
        if isinstance(v, dict):
            return {k: fill(x) for k, x in v.items()}
        return v

    return fill(json.loads((EVENTS / f"{name}.json").read_text()))  # type: ignore[return-value]


def replay(ev: dict, client: str, sub: str = "pre-tool-use", env: dict | None = None) -> Run:
    """`spark-git hook <sub> --client <client>` as that client runs it: a process in the event's cwd."""
    cwd = Path(str(ev.get("cwd")))
    return spark(cwd if cwd.is_dir() else None, "hook", sub, "--client", client, env=env, input=json.dumps(ev), timeout=60, process=True)
