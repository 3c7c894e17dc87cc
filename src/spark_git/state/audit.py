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
    record_many(layout, task, [(section, entry)], session)


def record_many(layout: Layout, task: str, entries: list[tuple[str, dict[str, Any]]], session: str | None = None) -> None:
    """Appends each (section, entry) in order, in one read and one atomic write: all of them or none."""
    for section, _ in entries:
        if section not in SECTIONS:
            raise ValueError(f"unknown audit section {section!r}")
    at = now()
    path = layout.audit_trail(task)
    with mutex(layout, f"audit-{task}"):
        trail = read_optional(path, AuditTrail) or AuditTrail(task_name=task, session_id=session)
        if trail.session_id is None:
            trail.session_id = session
        for section, entry in entries:
            getattr(trail, section).append({"at": at, **entry})
        write_atomic(path, trail)


def event_entry(kind: str, session: str | None = None, **payload: Any) -> tuple[str, dict[str, Any]]:
    """An event as record_many takes it."""
    return "events", {"kind": kind, "session_id": session, **payload}


def event(layout: Layout, task: str, kind: str, session: str | None = None, **payload: Any) -> None:
    record_many(layout, task, [event_entry(kind, session, **payload)], session)


def load(layout: Layout, task: str) -> AuditTrail | None:
    return read_optional(layout.audit_trail(task), AuditTrail)
