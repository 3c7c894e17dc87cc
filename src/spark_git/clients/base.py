"""The interface every agent-client adapter implements (Claude Code, Codex CLI, Gemini CLI: each one
module behind it plus one line in clients/registry.py).

The hook fast path never imports this module (typing costs it milliseconds); it exists for type
checkers and for the conformance test of each registered client."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from spark_git.clients.facts import Facts
from spark_git.clients.jsonhooks import Wanted
from spark_git.guard.calls import BadEvent, Decision, Reply, ToolCall

if TYPE_CHECKING:
    from spark_git.clients.checkpoint import SessionStartData
    from spark_git.clients.settings import HooksData


@runtime_checkable
class Client(Protocol):
    name: str  # the registry key (`--client NAME`)
    facts: Facts  # its files: settings, what the hook protects, its sandbox (clients/facts.py)

    def parse_event(self, raw: str) -> ToolCall:
        """The client's pre-tool-use event (its hook's stdin) as a neutral ToolCall; BadEvent when
        it cannot be read."""
        ...

    def render(self, d: Decision) -> Reply:
        """The policy's answer as the client expects it: exit code, stdout, stderr."""
        ...

    def render_bad_event(self, e: BadEvent) -> Reply:
        ...

    def settings_files(self) -> dict[str, Path]:
        """scope (project, local, user) -> its settings file: relative to the repo root, or absolute
        (its facts' settings_files())."""
        ...

    def wanted(self) -> list[Wanted]:
        """spark-git's hook entries for this client."""
        ...

    def install(self, root: Path, scope: str = "project") -> HooksData:
        """spark-git's hooks merged into the client's settings under `root`; idempotent."""
        ...

    def uninstall(self, root: Path, scope: str = "project") -> HooksData:
        """Only spark-git's entries removed from the client's settings."""
        ...

    def session_start(self, d: SessionStartData) -> str:
        """What the client shows the model at session start (after a restart or compaction)."""
        ...
