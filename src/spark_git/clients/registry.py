"""Agent clients by name: one line per client, "module:attribute" of its adapter (a clients.base.Client),
imported only when asked for. Every list of client files is derived from the adapters' facts
(clients/facts.py) through here. Standard library only: the hook fast path looks its client up here."""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (it costs the hook milliseconds)
if TYPE_CHECKING:
    from spark_git.clients.base import Client

CLIENTS: dict[str, str] = {
    "claude": "spark_git.clients.claude:CLAUDE",
    "codex": "spark_git.clients.codex:CODEX",
    "gemini": "spark_git.clients.gemini:GEMINI",
}
DEFAULT = "claude"  # the client `spark-git hook pre-tool-use` speaks for


def get(name: str = DEFAULT) -> Client:
    mod, _, attr = CLIENTS[name].partition(":")
    client: Client = getattr(importlib.import_module(mod), attr)
    return client


def every() -> list[Client]:
    return [get(n) for n in CLIENTS]


def repo_settings() -> list[str]:
    """Every client's settings files that live in a worktree (relative paths)."""
    return list(dict.fromkeys(f for c in every() for f in c.facts.repo_files()))


def protected() -> tuple[str, ...]:
    """The names no agent may write, anywhere in a path, of every client (their config directories)."""
    return tuple(dict.fromkeys(p for c in every() for p in c.facts.protect))
