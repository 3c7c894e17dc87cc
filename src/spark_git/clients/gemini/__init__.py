"""The Gemini CLI adapter. Gemini reads hooks from `.gemini/settings.json` (or `~/.gemini/…`),
Claude-shaped, events `BeforeTool` and `SessionStart`; the event carries `session_id`, `cwd`,
`hook_event_name`, `timestamp`, `tool_name`, `tool_input`. `write_file` and `replace`
(`file_path`) are judged like Claude's Write/Edit, `run_shell_command` (`command`, `dir_path`) like
Bash, starting in `dir_path` when given. Exit 0 allows, 2 denies with stderr as the reason; Gemini
lets a call through on any other exit, so the entry runs inside jsonhooks.WRAP, which blocks on one.
SessionStart context must be JSON `hookSpecificOutput.additionalContext`.

Imported before every tool call: standard library only at module level."""

from __future__ import annotations

import json
import os
from pathlib import Path

from spark_git.clients.facts import Facts, Run
from spark_git.clients.hookfiles import HooksInSettings
from spark_git.clients.jsonhooks import Wanted, read_event
from spark_git.guard.calls import EDIT, OTHER, SHELL, WRITE, BadEvent, Decision, Reply, ToolCall

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (it costs the hook milliseconds)
if TYPE_CHECKING:
    from typing import Any

    from spark_git.clients.checkpoint import SessionStartData

CONFIG_DIR = ".gemini"
FACTS = Facts("gemini", "Gemini CLI", CONFIG_DIR, {"project": ".gemini/settings.json", "user": "~/.gemini/settings.json"},
              run=Run(("gemini", "-p", "{prompt}", "--output-format", "stream-json"), ("gemini", "-i", "{prompt}")),
              instructions=("GEMINI.md", False), wrap=True,  # it lets a call through on exit 1, a silent 2, a signal
              state=("~/.gemini",),  # no OS sandbox spark-git can configure: `agent run` boxes it (ops/life/agentbox.py)
              extras="spark_git.clients.gemini.extras:EXTRAS", model=("GOOGLE_GEMINI_BASE_URL", "https://generativelanguage.googleapis.com"))  # trust and hooksConfig, which can switch its hooks off
PRE_TOOL_USE = FACTS.hook("spark-git hook pre-tool-use --client gemini")
SESSION_START = FACTS.hook("spark-git hook session-start --client gemini")
KINDS = {"write_file": WRITE, "replace": EDIT, "run_shell_command": SHELL}
MATCHER = "|".join(KINDS)


def _str(d: dict[str, Any], key: str) -> str | None:
    v = d.get(key)
    return v if isinstance(v, str) and v else None


class Gemini(HooksInSettings):
    name = FACTS.name
    facts = FACTS

    def parse_event(self, raw: str) -> ToolCall:
        event = read_event(raw)
        tool = _str(event, "tool_name") or ""
        raw_in = event.get("tool_input")
        tin: dict[str, Any] = raw_in if isinstance(raw_in, dict) else {}
        kind = KINDS.get(tool, OTHER)
        cwd = _str(event, "cwd") or os.getcwd()
        target = _str(tin, "file_path") if kind in (WRITE, EDIT) else None
        return ToolCall(
            kind, tool, cwd,
            paths=(target,) if target else (),
            command=tin.get("command") if kind == SHELL and isinstance(tin.get("command"), str) else None,
            session_id=_str(event, "session_id"),
            workdir=_str(tin, "dir_path") if kind == SHELL else None,
        )

    def render(self, d: Decision) -> Reply:
        if not d.allow:
            return Reply(2, stderr=d.reason + "\n")
        return Reply(0)  # Gemini parses stdout as JSON: an allow says nothing

    def render_bad_event(self, e: BadEvent) -> Reply:
        # Outside a live repo (inside one it blocks: hooks.main): exit 0, the text shown to the user as
        # a system message; the entry's wrapper (jsonhooks.WRAP) takes any exit but 0 and 2 for a crash.
        return Reply(0, stderr=f"spark-git hook: {e}; allowing\n")

    def settings_files(self) -> dict[str, Path]:
        return FACTS.settings_files()

    def wanted(self) -> list[Wanted]:
        return [Wanted("BeforeTool", PRE_TOOL_USE, MATCHER), Wanted("SessionStart", SESSION_START)]


    def session_start(self, d: SessionStartData) -> str:
        """JSON on stdout: plain text would reach only the user, not the model."""
        from spark_git.clients.checkpoint import session_text

        text = session_text(d)
        if not text:
            return ""
        return json.dumps({"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}})


GEMINI = Gemini()
