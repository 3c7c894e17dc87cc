"""Ownership locks (long-lived, belong to a session) and process mutexes (short-lived, belong to a process).

Mutexes are kernel `flock`s on files under `<git-common-dir>/spark/`: released when the process dies,
so they are never stale and their files are never unlinked (unlinking splits waiters across inodes).
"""

from __future__ import annotations

import json
import os
import secrets
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from spark_git.core.errors import BadInput, Blocked
from spark_git.core.layout import Layout
from spark_git.state.models import now, parse_time

SESSION_ENV = "SPARK_SESSION_ID"

# Mutex names. One per repo for worktree/branch creation and removal (git fails when `worktree add`
# runs in parallel), one per task for task.json read-modify-write and merges, one for refs/notes/spark,
# one for main.
WORKTREES = "worktrees"
NOTES = "notes"
MAIN = "main"


def task_mutex_name(task: str) -> str:
    return f"task-{task}"


@contextmanager
def mutex(layout: Layout, name: str, timeout: float = 3600.0) -> Iterator[None]:
    from filelock import FileLock, Timeout  # lazy: costs ~50 ms to import

    layout.spark_dir.mkdir(parents=True, exist_ok=True)
    path = layout.spark_dir / f"{name}.lock"
    owner = layout.spark_dir / f"{name}.owner.json"
    lock = FileLock(path, timeout=timeout, thread_local=False, fallback_to_soft=False, preserve_lock_file=True)
    try:
        lock.acquire()
    except Timeout as e:
        holder = _read_owner(owner)
        raise Blocked(
            f"timed out after {timeout:.0f}s waiting for the {name!r} mutex" + (f" held by pid {holder.get('pid')} ({holder.get('command')})" if holder else ""),
            details={"mutex": str(path), "holder": holder},
        ) from e
    try:
        _write_owner(owner)
        yield
    finally:
        lock.release()


def _write_owner(owner: Path) -> None:
    # Informational only (who holds it, for messages and doctor); the flock is the truth.
    try:
        owner.write_text(json.dumps({"pid": os.getpid(), "command": " ".join(sys.argv[:4]), "since": now()}))
    except OSError:
        pass


def _read_owner(owner: Path) -> dict[str, Any]:
    try:
        got = json.loads(owner.read_text())
    except (OSError, ValueError):
        return {}
    return got if isinstance(got, dict) else {}


# -- sessions and ownership ------------------------------------------------------------------


def session_from(given: str | None) -> str | None:
    s = given or os.environ.get(SESSION_ENV) or None
    if s is not None and (not s.strip() or any(ord(c) < 32 for c in s) or len(s) > 200):
        raise BadInput(f"bad session id {s!r}: use printable characters, at most 200")
    return s


def mint_session() -> str:
    return f"spark-{datetime.now(UTC):%Y%m%d}-{secrets.token_hex(4)}"


def idle_for(last_active_at: str | None) -> str:
    if not last_active_at:
        return "idle for an unknown time"
    try:
        secs = max(0.0, time.time() - parse_time(last_active_at).timestamp())
    except ValueError:
        return "idle for an unknown time"
    return "idle " + human_duration(secs)


def human_duration(secs: float) -> str:
    secs = int(secs)
    if secs < 60:
        return f"{secs} s"
    mins = secs // 60
    if mins < 60:
        return f"{mins} min"
    hours, mins = divmod(mins, 60)
    if hours < 48:
        return f"{hours} h {mins} min"
    return f"{hours // 24} days {hours % 24} h"


def require_owner(what: str, owner: str, last_active_at: str | None, session: str | None, task: str | None = None) -> None:
    """Blocked unless `session` owns `what`. The message names the owner and how long it has been idle."""
    if session == owner:
        return
    idle = idle_for(last_active_at)
    if session is None:
        raise Blocked(
            f"{what} is owned by session {owner} ({idle}) and no session was given",
            hint=f"pass --session {owner} or export {SESSION_ENV}={owner} if you are that session",
            details={"owner": owner, "last_active_at": last_active_at},
            task=task,
        )
    raise Blocked(
        f"{what} is owned by session {owner} ({idle}), not by {session}",
        hint="wait for the owner to finish, or ask a human to break the lock explicitly",
        details={"owner": owner, "last_active_at": last_active_at, "session": session},
        task=task,
    )
