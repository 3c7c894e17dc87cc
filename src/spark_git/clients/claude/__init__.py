"""The Claude Code adapter: its PreToolUse event as a ToolCall, a Decision as its exit code (0 allows,
2 blocks with the reason on stderr, 1 is a non-blocking hook error), spark-git's entries in its
settings file (PreToolUse, SessionStart, and WorktreeCreate/WorktreeRemove: ops/life/wthooks.py), and the
SessionStart text it adds to the model's context.

Imported before every tool call, so only the standard library at module level; the settings and
session-start parts load pydantic inside the functions that need it."""

from __future__ import annotations

import json
import os
from pathlib import Path

from spark_git.clients.facts import Facts, Run, Sandbox
from spark_git.clients.hookfiles import HooksInSettings
from spark_git.clients.jsonhooks import Wanted
from spark_git.guard.calls import EDIT, OTHER, SHELL, WRITE, BadEvent, Decision, Reply, ToolCall

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (it costs the hook milliseconds)
if TYPE_CHECKING:
    from spark_git.clients.checkpoint import AgentCheckpoint, SessionStartData

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
)
# Fail closed: a hook that cannot run (spark-git missing, a crash) blocks the tool call.
FAIL_CLOSED = {"onFailure": "block"}


class ClaudeCode(HooksInSettings):
    name = FACTS.name
    facts = FACTS

    # -- pre-tool-use ------------------------------------------------------------------------

    def parse_event(self, raw: str) -> ToolCall:
        try:
            event = json.loads(raw) if raw.strip() else {}
        except ValueError as e:
            raise BadEvent(f"stdin is not JSON ({e})") from e
        if not isinstance(event, dict):
            raise BadEvent("stdin is not a JSON object")
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
        if d.agent is not None:
            return _agent_text(d.agent, d.problems)
        if not d.tasks and not d.problems:
            return ""
        lines = [f"spark-git: session {', '.join(d.sessions)} owns {len(d.tasks)} task(s)."]
        for t in d.tasks:
            lines.append(f"- task {t.task}" + (f" ({t.title})" if t.title else "") + f": state {t.state}, branch {t.task_branch} at {(t.head or '?')[:12]}")
            lines.append(f"  waiting for: {t.waiting_for or 'nothing from the human'}")
            lines.append(f"  task worktree: {t.task_worktree}")
            for a, p in t.agent_worktrees.items():
                lines.append(f"  agent {a}: {p}")
            lines.append("  next: " + " ; ".join(t.next))
        for p in d.problems:
            lines.append(f"- problem: {p}")
        return "\n".join(lines)


_ATTRIBUTION = {
    "add": "spark-git adds the \"[{a}] \" prefix and Spark-Agent/Spark-Task trailers to them when it merges",
    "require": "each commit subject must start with \"[{a}] \" (or carry a Spark-Agent: {a} trailer), or the merge is refused",
    "off": "they are not stamped; write \"[{a}] summary\" subjects anyway",
}


def _agent_text(me: AgentCheckpoint, problems: list[str]) -> str:
    return "\n".join([*agent_lines(me), *(f"- problem: {p}" for p in problems)])


def agent_lines(me: AgentCheckpoint) -> list[str]:
    """What an agent is told of itself: which agent it is, its worktree and branch, its goal, how it
    commits and reports. Its session start (every client) and its brief (`spark-git brief`) both carry them."""
    a, t = me.agent, me.task
    goal = " ".join(me.goal.split())
    return [
        f"spark-git: you are agent {a} (role {me.role}) of task {t}" + (f" ({me.title})" if me.title else "") + ", not the coordinator.",
        f"- your worktree: {me.worktree} (branch {me.branch}); work and commit only there",
        *([f"- your goal (task.md): {goal[:600]}"] if goal else []),
        f"- commits: commit on your branch with subjects like \"[{a}] what changed\"; " + _ATTRIBUTION[me.attribution].format(a=a),
        f"- report: spark-git report {t} --agent {a} --status COMPLETE (reviewers add --decision APPROVED|REJECTED --feedback \"…\")",
        f"- behind the task branch: spark-git sync {t} --agent {a}",
        f"- task {t}: state {me.task_state}, branch {me.task_branch} at {(me.task_head or '?')[:12]}; the coordinator merges, "
        "approves and completes it (those commands refuse an agent)",
    ]


CLAUDE = ClaudeCode()
