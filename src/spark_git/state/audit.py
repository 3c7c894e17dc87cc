"""`<task>/audit-trail.json`: append-only record of what happened, kept after cleanup.

Each append is read → modify → atomic write under the task's audit mutex (innermost in the lock
order main → task → worktrees → notes → audit), so concurrent writers never lose an entry and
readers always see valid JSON.
"""

from __future__ import annotations

from typing import Any

from spark_git.core.layout import Layout
from spark_git.state.files import read_optional, write_atomic
from spark_git.state.locks import mutex
from spark_git.state.models import AuditTrail, now

SECTIONS = ("state_transitions", "agent_invocations", "commits", "build_verifications", "events")


def record(layout: Layout, task: str, section: str, entry: dict[str, Any], session: str | None = None) -> None:
    if section not in SECTIONS:
        raise ValueError(f"unknown audit section {section!r}")
    entry = {"at": now(), **entry}
    path = layout.audit_trail(task)
    with mutex(layout, f"audit-{task}"):
        trail = read_optional(path, AuditTrail) or AuditTrail(task_name=task, session_id=session)
        if trail.session_id is None:
            trail.session_id = session
        getattr(trail, section).append(entry)
        write_atomic(path, trail)


def event(layout: Layout, task: str, kind: str, session: str | None = None, **payload: Any) -> None:
    record(layout, task, "events", {"kind": kind, "session_id": session, **payload}, session=session)


def load(layout: Layout, task: str) -> AuditTrail | None:
    return read_optional(layout.audit_trail(task), AuditTrail)
