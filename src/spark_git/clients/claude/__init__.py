"""The Claude Code adapter: its PreToolUse event as a ToolCall, a Decision as its exit code (0 allows,
2 blocks with the reason on stderr, 1 is a non-blocking hook error), spark-git's entries in its
settings file (PreToolUse, SessionStart, and WorktreeCreate/WorktreeRemove: ops/life/wthooks.py), and the
SessionStart text it adds to the model's context.

Imported before every tool call, so only the standard library at module level; the settings and
session-start parts load pydantic inside the functions that need it."""

from __future__ import annotations

import os
from pathlib import Path

from spark_git.clients.facts import Facts, Run, Sandbox
from spark_git.clients.hookfiles import HooksInSettings
from spark_git.clients.jsonhooks import Wanted, read_event
from spark_git.guard.calls import EDIT, OTHER, SHELL, WRITE, BadEvent, Decision, Reply, ToolCall

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (it costs the hook milliseconds)
if TYPE_CHECKING:
    from spark_git.clients.checkpoint import SessionStartData

KINDS = {"Write": WRITE, "Edit": EDIT, "MultiEdit": EDIT, "NotebookEdit": EDIT, "Bash": SHELL, "PowerShell": SHELL}
PRE_TOOL_USE = "spark-git hook pre-tool-use"
SESSION_START = "spark-git hook session-start"
WORKTREE_CREATE = "spark-git hook worktree-create"
WORKTREE_REMOVE = "spark-git hook worktree-remove"
MATCHER = "Write|Edit|MultiEdit|NotebookEdit|Bash|PowerShell"
CONFIG_DIR = ".claude"
LOCAL = ".claude/settings.local.json"
SANDBOX = Sandbox(LOCAL, needs=("bwrap",), userns=True)  # clients/claude/sandbox.py: per agent worktree, kept out of git
FACTS = Facts(
    "claude", "Claude Code", CONFIG_DIR,
    {"project": ".claude/settings.json", "local": LOCAL, "user": "~/.claude/settings.json"},
    main_loads=("local",),  # a session in any worktree also reads the main worktree's local settings
    sandbox=SANDBOX,
    # Any of these in any file a session loads (Claude Code 2.1.328's settings schema) undoes spark-git's setup.
    off=(("disableAllHooks", True, "hooks"), ("allowManagedHooksOnly", True, "hooks"), ("sandbox.enabled", False, "sandbox"),
         ("sandbox.allowUnsandboxedCommands", True, "sandbox"), ("sandbox.filesystem.disabled", True, "sandbox")),
    managed=("/etc/claude-code/managed-settings.json",),
    run=Run(("claude", "-p", "{prompt}", "--output-format", "stream-json", "--verbose"), ("claude", "{prompt}")),
    instructions=(".claude/skills/spark-git/SKILL.md", True),
    state=("~/.claude", "~/.claude.json", "$CLAUDE_CONFIG_DIR"),  # writable in spark-git's box around it (ops/life/agentbox.py)
    extras="spark_git.clients.claude.extras:EXTRAS",  # its sandbox in every agent worktree
    model=("ANTHROPIC_BASE_URL", "https://api.anthropic.com"),
)
# Fail closed: a hook that cannot run (spark-git missing, a crash) blocks the tool call.
FAIL_CLOSED = {"onFailure": "block"}


class ClaudeCode(HooksInSettings):
    name = FACTS.name
    facts = FACTS

    # -- pre-tool-use ------------------------------------------------------------------------

    def parse_event(self, raw: str) -> ToolCall:
        event = read_event(raw)
        tool = event.get("tool_name") or ""
        tin = event.get("tool_input") or {}
        if not isinstance(tin, dict):
            tin = {}
        kind = KINDS.get(tool, OTHER) if isinstance(tool, str) else OTHER
        target = (tin.get("file_path") or tin.get("notebook_path")) if kind in (WRITE, EDIT) else None
        command = tin.get("command") if kind == SHELL else None
        sid = event.get("session_id")
        return ToolCall(
            kind, tool, event.get("cwd") or os.getcwd(),
            paths=(target,) if isinstance(target, str) and target else (),
            command=command if isinstance(command, str) else None,
            session_id=sid if isinstance(sid, str) else None,
        )

    def render(self, d: Decision) -> Reply:
        if not d.allow:
            return Reply(2, stderr=d.reason + "\n")
        return Reply(0, stdout=d.reason + "\n" if d.reason else "")

    def render_bad_event(self, e: BadEvent) -> Reply:
        # Outside a live repo (inside one it blocks: hooks.main): an allow with the warning in the
        # transcript. Not exit 1: with `onFailure: block` Claude Code blocks on it (measured, 2.1.328).
        return Reply(0, stdout=f"spark-git hook: {e}; allowing\n")

    # -- settings ----------------------------------------------------------------------------

    def settings_files(self) -> dict[str, Path]:
        return FACTS.settings_files()

    def wanted(self) -> list[Wanted]:
        return [
            Wanted("PreToolUse", PRE_TOOL_USE, MATCHER, FAIL_CLOSED),
            Wanted("SessionStart", SESSION_START, None, FAIL_CLOSED),
            Wanted("WorktreeCreate", WORKTREE_CREATE, None, FAIL_CLOSED),
            Wanted("WorktreeRemove", WORKTREE_REMOVE, None, FAIL_CLOSED),
        ]


    # -- session start -----------------------------------------------------------------------

    def session_start(self, d: SessionStartData) -> str:
        """Plain text for Claude Code's context (stdout of a SessionStart hook); "" says nothing."""
        from spark_git.clients.checkpoint import session_text

        return session_text(d)


CLAUDE = ClaudeCode()
