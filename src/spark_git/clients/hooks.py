"""`spark-git hook pre-tool-use`, the fast path from __main__: runs before every tool call of an agent,
so everything it imports is standard library only (no typer, pydantic, GitPython, rich, filelock; no
git process). The client adapter parses the event and renders the answer; guard/policy.py decides."""

from __future__ import annotations

import os
import sys

from spark_git.clients import registry
from spark_git.guard import policy
from spark_git.guard.calls import BadEvent


def client_of(args: list[str]) -> str | None:
    """The client named by `--client NAME` / `--client=NAME` (the default without one); None when the
    arguments are anything else (the typer app then answers, with its usage error)."""
    if not args:
        return registry.DEFAULT
    if len(args) == 2 and args[0] == "--client":
        name = args[1]
    elif len(args) == 1 and args[0].startswith("--client="):
        name = args[0].partition("=")[2]
    else:
        return None
    return name if name in registry.CLIENTS else None


def main(argv: list[str]) -> int:
    """Answers `pre-tool-use [--client NAME]` (its event on stdin); -1 for anything else, which the
    typer app handles."""
    client = client_of(argv[1:]) if argv[:1] == ["pre-tool-use"] else None
    if client is None:
        return -1
    adapter = registry.get(client)
    cwd = os.getcwd()
    try:
        call = adapter.parse_event(sys.stdin.read())
        cwd = call.cwd
        reply = adapter.render(policy.decide(call, registry.protected()))
    except Exception as e:
        # An unreadable event or a crash: inside a repo with live tasks that blocks; elsewhere it is
        # a non-blocking hook error (the tool call proceeds, the user sees the message).
        blocked = policy.crashed(cwd, e)
        bad = e if isinstance(e, BadEvent) else BadEvent(f"internal error {type(e).__name__}: {e}")
        reply = adapter.render(blocked) if blocked else adapter.render_bad_event(bad)
    if reply.stdout:
        sys.stdout.write(reply.stdout)
    if reply.stderr:
        sys.stderr.write(reply.stderr)
    return reply.exit_code
