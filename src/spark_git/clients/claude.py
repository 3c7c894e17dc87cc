"""The Claude Code adapter: its PreToolUse event as a ToolCall, a Decision as its exit code (0 allows,
2 blocks with the reason on stderr, 1 is a non-blocking hook error), spark-git's entries in its
settings file, and the SessionStart text it adds to the model's context.

Imported before every tool call, so only the standard library at module level; the settings and
session-start parts load pydantic inside the functions that need it."""

from __future__ import annotations

import json
import os
from pathlib import Path

from spark_git.clients.calls import EDIT, OTHER, SHELL, WRITE, BadEvent, Decision, Reply, ToolCall

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (it costs the hook milliseconds)
if TYPE_CHECKING:
    from typing import Any

    from spark_git.clients.checkpoint import SessionStartData
    from spark_git.clients.settings import HooksData

KINDS = {"Write": WRITE, "Edit": EDIT, "MultiEdit": EDIT, "NotebookEdit": EDIT, "Bash": SHELL, "PowerShell": SHELL}
PRE_TOOL_USE = "spark-git hook pre-tool-use"
SESSION_START = "spark-git hook session-start"
MATCHER = "Write|Edit|MultiEdit|NotebookEdit|Bash|PowerShell"
OURS = (PRE_TOOL_USE, SESSION_START)
SCOPES = {"project": "settings.json", "local": "settings.local.json"}
SCOPE_USAGE = "use project (.claude/settings.json) or local (.claude/settings.local.json)"


class ClaudeCode:
    name = "claude"

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
        # Exit 1 is a non-blocking hook error in Claude Code: the tool call proceeds, the user sees this.
        return Reply(1, stderr=f"spark-git hook: {e}; allowing\n")

    # -- settings ----------------------------------------------------------------------------

    def settings_path(self, root: Path, scope: str) -> Path:
        from spark_git.clients import settings  # pydantic: only `hooks install|uninstall` pay for it

        return root / ".claude" / settings.scope_file(SCOPES, scope, SCOPE_USAGE)

    def install(self, root: Path, scope: str = "project") -> HooksData:
        """spark-git's hooks merged into the settings file (nothing else dropped); idempotent."""
        from spark_git.clients import settings

        path = self.settings_path(root, scope)
        data = settings.load(path)
        hooks = data.setdefault("hooks", {})
        wanted: list[tuple[str, dict[str, Any], str]] = [
            ("PreToolUse", {"matcher": MATCHER, "hooks": [_entry(PRE_TOOL_USE)]}, PRE_TOOL_USE),
            ("SessionStart", {"hooks": [_entry(SESSION_START)]}, SESSION_START),
        ]
        changed = False
        for event, group, cmd in wanted:
            groups = hooks.setdefault(event, [])
            found = _find(groups, cmd)
            if found is None:
                groups.append(group)
                changed = True
            else:
                changed = _upgrade(groups, found, group) or changed
        if changed:
            settings.save(path, data)
        return settings.HooksData(path=str(path), scope=scope, changed=changed, entries=[f"{e}: {c}" for e, _, c in wanted])

    def uninstall(self, root: Path, scope: str = "project") -> HooksData:
        """Only spark-git's entries removed (and the containers they emptied; the file too if it held
        nothing else)."""
        from spark_git.clients import settings

        path = self.settings_path(root, scope)
        if not path.exists():
            return settings.HooksData(path=str(path), scope=scope, changed=False, entries=[])
        data = settings.load(path)
        hooks = data.get("hooks")
        removed = _remove_ours(hooks) if isinstance(hooks, dict) else []
        if isinstance(hooks, dict) and not hooks:
            del data["hooks"]
        if not removed:
            return settings.HooksData(path=str(path), scope=scope, changed=False, entries=[])
        if not data:
            path.unlink()  # the file held nothing but spark-git's entries
            return settings.HooksData(path=str(path), scope=scope, changed=True, entries=removed, removed_file=True)
        settings.save(path, data)
        return settings.HooksData(path=str(path), scope=scope, changed=True, entries=removed)

    # -- session start -----------------------------------------------------------------------

    def session_start(self, d: SessionStartData) -> str:
        """Plain text for Claude Code's context (stdout of a SessionStart hook); "" says nothing."""
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


def _entry(command: str) -> dict[str, Any]:
    # Fail closed: a hook that cannot run (spark-git missing, a crash) blocks the tool call.
    return {"type": "command", "command": command, "onFailure": "block"}


def is_ours(command: object, wanted: tuple[str, ...] = OURS) -> bool:
    """`spark-git hook …` as installed, or with spark-git named by an absolute path."""
    if not isinstance(command, str):
        return False
    exe, _, rest = command.strip().partition(" ")
    return os.path.basename(exe) == "spark-git" and f"spark-git {rest.strip()}" in wanted


def _find(groups: list[Any], command: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """(group, hook entry) of spark-git's `command` in an event's groups."""
    for g in groups:
        for h in (g.get("hooks") or []) if isinstance(g, dict) else []:
            if isinstance(h, dict) and is_ours(h.get("command"), (command,)):
                return g, h
    return None


def _upgrade(groups: list[Any], found: tuple[dict[str, Any], dict[str, Any]], wanted: dict[str, Any]) -> bool:
    """An older or hand-made spark-git entry brought up to date: the full matcher (a narrower one
    lets the other tools through) and onFailure=block. The user's command path is kept; a group
    shared with other hooks keeps its matcher, ours moves to a group of its own."""
    group, hook = found
    changed = False
    if "matcher" in wanted and group.get("matcher") != wanted["matcher"]:
        if len(group["hooks"]) == 1:
            group["matcher"] = wanted["matcher"]
        else:
            group["hooks"].remove(hook)
            groups.append({"matcher": wanted["matcher"], "hooks": [hook]})
        changed = True
    if hook.get("onFailure") != "block":
        hook["onFailure"] = "block"
        changed = True
    return changed


def _remove_ours(hooks: dict[str, Any]) -> list[str]:
    """Drops spark-git's hook entries from `hooks` in place; returns them as "event: command"."""
    removed: list[str] = []
    for event in list(hooks):
        kept_groups = []
        for g in hooks[event]:
            if not isinstance(g, dict) or not isinstance(g.get("hooks"), list):
                kept_groups.append(g)
                continue
            kept = [h for h in g["hooks"] if not (isinstance(h, dict) and is_ours(h.get("command")))]
            removed += [f"{event}: {h['command']}" for h in g["hooks"] if isinstance(h, dict) and is_ours(h.get("command"))]
            if kept:
                kept_groups.append({**g, "hooks": kept})
            elif not g["hooks"]:
                kept_groups.append(g)  # an empty group that was not ours
        if kept_groups:
            hooks[event] = kept_groups
        else:
            del hooks[event]
    return removed


CLAUDE = ClaudeCode()
