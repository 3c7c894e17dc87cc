"""`spark-git hook pre-tool-use`, the fast path from __main__: runs before every tool call of an agent,
so everything it imports is standard library only (no typer, pydantic, GitPython, rich, filelock; no
git process). The client adapter parses the event and renders the answer; clients/policy.py decides."""

from __future__ import annotations

import os
import sys

from spark_git.clients import policy, registry
from spark_git.clients.calls import BadEvent


def main(argv: list[str], client: str = registry.DEFAULT) -> int:
    """Answers `pre-tool-use` (its event on stdin); -1 for anything else, which the typer app handles."""
    if argv[:1] != ["pre-tool-use"] or any(a in ("-h", "--help") for a in argv):
        return -1
    adapter = registry.get(client)
    cwd = os.getcwd()
    try:
        call = adapter.parse_event(sys.stdin.read())
        cwd = call.cwd
        reply = adapter.render(policy.decide(call))
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
