"""The client-neutral request and answer of a pre-tool-use hook: a client adapter parses its event
into a ToolCall, the policy answers with a Decision, the adapter renders that for its client.
Standard library only, no imports: these are built before every tool call of an agent."""

from __future__ import annotations

# ToolCall.kind
WRITE = "write"  # creates or replaces a file
EDIT = "edit"  # changes a file in place
SHELL = "shell"  # runs a shell command
OTHER = "other"  # anything else: not checked


class ToolCall:
    # Plain classes, not dataclasses: importing dataclasses and building them costs ~20 ms per call.
    __slots__ = ("command", "cwd", "kind", "paths", "session_id", "tool", "workdir")

    def __init__(
        self, kind: str, tool: str, cwd: str, paths: tuple[str, ...] = (), command: str | None = None, session_id: str | None = None,
        workdir: str | None = None,
    ) -> None:
        self.kind = kind
        self.tool = tool  # the client's name for the tool, shown in reasons
        self.cwd = cwd
        self.paths = paths  # write/edit targets as the client gave them (relative to cwd or absolute)
        self.command = command  # shell: the command line; None when the client gave none
        self.session_id = session_id  # the client's session, besides SPARK_SESSION_ID
        # shell: the directory the command starts in when not cwd (Gemini's dir_path, Codex's workdir;
        # relative to cwd); cwd stays the event's, which identity falls back to
        self.workdir = workdir


class Decision:
    __slots__ = ("allow", "reason")

    def __init__(self, allow: bool, reason: str) -> None:
        self.allow = allow
        self.reason = reason  # one line; "" says nothing (not a spark-git repo)


ALLOW_UNTOUCHED = Decision(True, "")  # not a spark-git repo: say nothing


class Reply:
    """What a client adapter hands back to its client process: exit code and output."""

    __slots__ = ("exit_code", "stderr", "stdout")

    def __init__(self, exit_code: int, stdout: str = "", stderr: str = "") -> None:
        self.exit_code = exit_code
        self.stdout = stdout
        self.stderr = stderr


class BadEvent(ValueError):
    """The client's hook event could not be read; the adapter renders it as its client expects."""
