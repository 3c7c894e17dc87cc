"""The main-worktree lock `<tasks_root>/main/task.json`: same ownership rules as a task lock."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from spark_git.core.errors import BadInput, Blocked, CorruptState
from spark_git.core.model import Model
from spark_git.state.locks import MAIN, idle_for, require_owner
from spark_git.state.models import MainLock, now
from spark_git.state.store import Store


class MainLockData(Model):
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


def view(store: Store, lock: MainLock | None, **kw: Any) -> MainLockData:
    path = str(store.layout.main_lock())
    if lock is None:
        return MainLockData(held=False, path=path, **kw)
    return MainLockData(
        held=True, session_id=lock.session_id, created_at=lock.created_at, last_active_at=lock.last_active_at,
        idle=idle_for(lock.last_active_at), reason=lock.reason, path=path, **kw,
    )


def read(store: Store) -> MainLock | None:
    return store.read_main_lock()


def lock(store: Store, session: str, reason: str | None = None) -> MainLockData:
    with store.mutex(MAIN):
        cur = store.read_main_lock()
        if cur is not None:
            require_owner("the main worktree", cur.session_id, cur.last_active_at, session, main=True)
            cur.last_active_at = now()
            store.write_main_lock(cur)
            return view(store, cur)
        new = MainLock(session_id=session, reason=reason, pid=os.getpid())
        if not store.create_main_lock(new):  # pragma: no cover - the mutex makes this unreachable
            raise Blocked("the main worktree was just locked by another session")
    store.event("main", "main_locked", session, reason=reason)
    return view(store, new)


def unlock(store: Store, session: str | None, force: bool = False, why: str | None = None) -> MainLockData:
    if force and not (why and why.strip()):
        raise BadInput("--force needs --why: breaking someone's lock is logged with the reason")
    problem = None
    with store.mutex(MAIN):
        try:
            cur = store.read_main_lock()
        except CorruptState as e:
            if not force:
                raise
            cur, problem = None, e.message  # a human may break an unreadable lock too; logged below
        if cur is None and problem is None:
            return view(store, None)
        if not force and cur is not None:
            require_owner("the main worktree", cur.session_id, cur.last_active_at, session, main=True)
        store.release_main_lock()
    owner = cur.session_id if cur is not None else None
    extra = {"problem": problem} if problem else {}
    store.event("main", "main_unlocked", session, owner=owner, forced=force, why=why, **extra)
    return view(store, None, forced_by=session if force else None, why=why, released=True, previous_owner=owner)


@contextmanager
def hold(store: Store, session: str, reason: str, *, task: str | None = None) -> Iterator[None]:
    """Holds the main mutex and the main-worktree lock for the duration of an operation (`complete`).
    Our own lock left by a killed run of the same session and reason is taken over; a lock this
    session holds for another reason (`lock main`) is used and left in place."""
    wait = store.layout.config.queue.wait_s
    with store.mutex(MAIN):
        held = store.read_main_lock()
        if held is not None and held.session_id != session and held.reason == reason:
            held = store.await_main_lock(reason, wait)  # remote mode: another machine's landing ends soon
        took = held is not None and held.session_id == session and held.reason == reason
        if held is not None and held.session_id != session:
            require_owner("the main worktree", held.session_id, held.last_active_at, session, task=task, main=True)
        if held is None:
            took = store.create_main_lock(MainLock(session_id=session, reason=reason, pid=os.getpid()))
            if not took and store.await_main_lock(reason, wait) is None:  # remote mode: taken between our read and our push
                took = store.create_main_lock(MainLock(session_id=session, reason=reason, pid=os.getpid()))
        try:
            yield
        finally:
            if took:
                store.release_main_lock()
