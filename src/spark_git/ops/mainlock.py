"""The main-worktree lock `<tasks_root>/main/task.json`: same ownership rules as a task lock."""

from __future__ import annotations

import os

from pydantic import BaseModel

from spark_git.state import audit
from spark_git.core.errors import BadInput, Blocked, CorruptState
from spark_git.core.layout import Layout
from spark_git.state.locks import MAIN, idle_for, mutex, require_owner
from spark_git.state.models import MainLock, now
from spark_git.state.files import create_exclusive, read_optional, write_atomic


class MainLockData(BaseModel):
    held: bool
    session_id: str | None = None
    created_at: str | None = None
    last_active_at: str | None = None
    idle: str | None = None
    reason: str | None = None
    path: str
    forced_by: str | None = None
    why: str | None = None
    released: bool = False  # unlock: a lock was there and is gone now
    previous_owner: str | None = None  # unlock: who held it (None if unknown: the lock was corrupt)


def view(layout: Layout, lock: MainLock | None, **kw) -> MainLockData:
    if lock is None:
        return MainLockData(held=False, path=str(layout.main_lock()), **kw)
    return MainLockData(
        held=True, session_id=lock.session_id, created_at=lock.created_at, last_active_at=lock.last_active_at,
        idle=idle_for(lock.last_active_at), reason=lock.reason, path=str(layout.main_lock()), **kw,
    )


def read(layout: Layout) -> MainLock | None:
    return read_optional(layout.main_lock(), MainLock)


def lock(layout: Layout, session: str, reason: str | None = None) -> MainLockData:
    path = layout.main_lock()
    path.parent.mkdir(parents=True, exist_ok=True)
    with mutex(layout, MAIN):
        cur = read(layout)
        if cur is not None:
            require_owner("the main worktree", cur.session_id, cur.last_active_at, session)
            cur.last_active_at = now()
            write_atomic(path, cur)
            return view(layout, cur)
        new = MainLock(session_id=session, reason=reason, pid=os.getpid())
        if not create_exclusive(path, new):  # pragma: no cover - the mutex makes this unreachable
            raise Blocked("the main worktree was just locked by another session")
    audit.event(layout, "main", "main_locked", session, reason=reason)
    return view(layout, new)


def unlock(layout: Layout, session: str | None, force: bool = False, why: str | None = None) -> MainLockData:
    if force and not (why and why.strip()):
        raise BadInput("--force needs --why: breaking someone's lock is logged with the reason")
    problem = None
    with mutex(layout, MAIN):
        try:
            cur = read(layout)
        except CorruptState as e:
            if not force:
                raise
            cur, problem = None, e.message  # a human may break an unreadable lock too; logged below
        if cur is None and problem is None:
            return view(layout, None)
        if not force and cur is not None:
            require_owner("the main worktree", cur.session_id, cur.last_active_at, session)
        os.unlink(layout.main_lock())
    owner = cur.session_id if cur is not None else None
    extra = {"problem": problem} if problem else {}
    audit.event(layout, "main", "main_unlocked", session, owner=owner, forced=force, why=why, **extra)
    return view(layout, None, forced_by=session if force else None, why=why, released=True, previous_owner=owner)
