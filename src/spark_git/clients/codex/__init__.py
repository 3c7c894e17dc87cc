"""The Codex CLI adapter. Codex reads Claude-shaped hooks from `.codex/hooks.json` (trusted projects)
or `~/.codex/hooks.json`; its PreToolUse event carries `cwd`, `session_id`, `tool_name`,
`tool_input`. Shell commands come as `Bash` (`tool_input.command`); file edits as `apply_patch` with
the patch text in `tool_input.command`: every file it adds, updates, deletes or moves (from and to)
is judged like a Claude Write/Edit, relative to the event's cwd. Exit 2 with stderr blocks.

Imported before every tool call: standard library only at module level."""

from __future__ import annotations

import os
from pathlib import Path

from spark_git.clients import patch
from spark_git.clients.facts import Facts, Run
from spark_git.clients.hookfiles import HooksInSettings
from spark_git.clients.jsonhooks import Wanted, read_event
from spark_git.guard.calls import EDIT, OTHER, SHELL, BadEvent, Decision, Reply, ToolCall

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (it costs the hook milliseconds)
if TYPE_CHECKING:
    from typing import Any

    from spark_git.clients.checkpoint import SessionStartData

CONFIG_DIR = ".codex"
# In a linked worktree Codex (0.169, measured) loads the main checkout's .codex/hooks.json, not the
# worktree's own copy (and only when the worktree has a .codex directory: hooks_from_main below).
# The user's file is in $CODEX_HOME (settings_files), ~/.codex by default.
FACTS = Facts("codex", "Codex CLI", CONFIG_DIR, {"project": ".codex/hooks.json", "user": "~/.codex/hooks.json"},
              main_loads=("project",), run=Run(("codex", "exec", "--json", "{prompt}"), ("codex", "{prompt}")),
              instructions=("AGENTS.md", False), wrap=True,  # it lets a call through when its hook fails, even cannot start
              own_box=True,  # its workspace-write sandbox, configured per agent worktree (clients/codex/box.py)
              state=("$CODEX_HOME", "~/.codex"),  # writable in spark-git's box around it (ops/life/agentbox.py)
              extras="spark_git.clients.codex.setup:EXTRAS",  # and where its model is: its config says (model_url there)
              model=("OPENAI_BASE_URL", "https://api.openai.com/v1"))  # the built-in openai provider's  # its trust entries, its sandbox per agent worktree
PRE_TOOL_USE = FACTS.hook("spark-git hook pre-tool-use --client codex")
SESSION_START = FACTS.hook("spark-git hook session-start --client codex")
# Codex selects apply_patch with the Write/Edit matchers; apply_patch is named too in case a
# version matches on the tool's own name.
MATCHER = "Bash|Write|Edit|apply_patch"
PATCH_TOOLS = ("apply_patch", "Write", "Edit")


def home() -> Path:
    """Where Codex keeps the user's config and hooks.json: $CODEX_HOME, else ~/.codex."""
    return Path(os.environ.get("CODEX_HOME") or Path(os.path.expanduser("~"), CONFIG_DIR))


def _text(value: object) -> str | None:
    """tool_input.command as text: a string, or an argv list (Codex's shell tool takes one) as the
    shell line that runs it (["git", "-C", "x", "commit"] is one command, not one per word); an
    `apply_patch` argv keeps its patch as is (quoting would mangle the header lines)."""
    if isinstance(value, str):
        return value
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value) or not value:
        return None
    if os.path.basename(value[0]) in patch.TOOLS:
        return "\n".join(value)
    import shlex  # only for the list form: the fast path does not pay for it otherwise

    return shlex.join(value)


class Codex(HooksInSettings):
    name = FACTS.name
    facts = FACTS
    hooks_from_main = True  # see FACTS: the worktree needs a .codex directory for them to load

    def parse_event(self, raw: str) -> ToolCall:
        event = read_event(raw)
        tool = event.get("tool_name") if isinstance(event.get("tool_name"), str) else ""
        raw_in = event.get("tool_input")
        tin: dict[str, Any] = raw_in if isinstance(raw_in, dict) else {}
        sid = event.get("session_id") if isinstance(event.get("session_id"), str) else None
        cwd = event.get("cwd") or os.getcwd()
        command = _text(tin.get("command"))
        target = tin.get("file_path")
        if tool in ("Write", "Edit") and isinstance(target, str) and target:  # Claude-style, should a version send it
            return ToolCall(EDIT, tool, cwd, paths=(target,), session_id=sid)
        if tool in PATCH_TOOLS:
            if command is None:
                raise BadEvent(f"{tool} without a patch in tool_input.command")
            return ToolCall(EDIT, tool, cwd, paths=patch.touched(command), session_id=sid)
        if tool == "Bash":
            fed = patch.from_shell(command) if command is not None else None
            if fed is not None:  # `apply_patch <<EOF`: judged by the files it patches
                return ToolCall(EDIT, "apply_patch", cwd, paths=patch.touched(fed), session_id=sid)
            workdir = tin.get("workdir")  # the shell tool's own `workdir`: where the command starts
            return ToolCall(SHELL, tool, cwd, command=command, session_id=sid, workdir=workdir if isinstance(workdir, str) and workdir else None)
        return ToolCall(OTHER, str(tool), cwd, session_id=sid)

    def render(self, d: Decision) -> Reply:
        if not d.allow:
            return Reply(2, stderr=d.reason + "\n")
        return Reply(0)  # Codex reads a PreToolUse hook's stdout as JSON: an allow says nothing

    def render_bad_event(self, e: BadEvent) -> Reply:
        return Reply(0, stderr=f"spark-git hook: {e}; allowing\n")  # outside a live repo: 0, as WRAP blocks on 1

    def settings_files(self) -> dict[str, Path]:
        return {**FACTS.settings_files(), "user": home() / "hooks.json"}

    def wanted(self) -> list[Wanted]:
        return [Wanted("PreToolUse", PRE_TOOL_USE, MATCHER), Wanted("SessionStart", SESSION_START)]


    def session_start(self, d: SessionStartData) -> str:
        from spark_git.clients.checkpoint import session_text

        return session_text(d)  # plain text on stdout becomes context, as in Claude Code


CODEX = Codex()
