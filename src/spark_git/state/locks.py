"""Ownership locks (long-lived, belong to a session) and process mutexes (short-lived, belong to a process).

Mutexes are kernel `flock`s on files under `<git-common-dir>/spark/`: released when the process dies,
so they are never stale and their files are never unlinked (unlinking splits waiters across inodes).
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from spark_git.core.errors import BadInput, Blocked
from spark_git.core.layout import Layout
from spark_git.state.models import now, parse_time

SESSION_ENV = "SPARK_SESSION_ID"

# Mutex names. One per repo for worktree/branch creation and removal (git fails when `worktree add`
# runs in parallel), one per task for task.json read-modify-write and merges, one for refs/notes/spark,
# one for main, one for `<git-common-dir>/info/exclude` (read-modify-write by any agent's start).
WORKTREES = "worktrees"
NOTES = "notes"
MAIN = "main"
EXCLUDE = "info-exclude"


# Held for milliseconds around one file or ref write: always waited for, silently unless it takes long.
LEAVES = (NOTES, "ports", EXCLUDE)
LEAF_PREFIXES = ("audit-", "remote-")
MOMENT_S = 2.0  # a wait longer than this is reported even when stderr is not a terminal


def task_mutex_name(task: str) -> str:
    return f"task-{task}"


def _is_leaf(name: str) -> bool:
    return name in LEAVES or name.startswith(LEAF_PREFIXES)


def describe_mutex(name: str) -> str:
    if name.startswith("task-"):
        return f"the task mutex of {name[len('task-'):]}"
    return f"the {name} mutex"


def held_by(holder: dict[str, Any]) -> str:
    """`pid N (spark-git merge t1 --agent a1) since 12:03:04`, from the owner file (may be empty)."""
    if not holder:
        return "another process"
    since = str(holder.get("since") or "")
    try:
        when = parse_time(since).astimezone().strftime("%H:%M:%S") + f", {human_duration(time.time() - parse_time(since).timestamp())} ago"
    except ValueError:
        when = since or "an unknown time"
    return f"pid {holder.get('pid')} ({holder.get('command')}) since {when}"


@contextmanager
def mutex(layout: Layout, name: str, timeout: float = 3600.0) -> Iterator[None]:
    from filelock import FileLock  # lazy: costs ~50 ms to import

    layout.spark_dir.mkdir(parents=True, exist_ok=True)
    path = layout.spark_dir / f"{name}.lock"
    owner = layout.spark_dir / f"{name}.owner.json"
    lock = FileLock(path, timeout=timeout, thread_local=False, fallback_to_soft=False, preserve_lock_file=True)
    _acquire(lock, layout, name, path, owner, timeout)
    try:
        _write_owner(owner)
        yield
    finally:
        lock.release()


def _acquire(lock: Any, layout: Layout, name: str, path: Path, owner: Path, timeout: float) -> None:
    """Takes `lock`; when it is held, says who holds it (on a terminal at once, elsewhere after a
    moment), or refuses at once under --no-wait (leaf mutexes are always waited for)."""
    from filelock import Timeout

    t0 = time.monotonic()
    try:
        lock.acquire(timeout=0)
        return
    except Timeout:
        pass
    leaf = _is_leaf(name)
    if not layout.wait and not leaf:
        holder = _read_owner(owner)
        raise Blocked(f"{describe_mutex(name)} is held by {held_by(holder)}, and --no-wait was given",
                      hint="try again later, or without --no-wait to wait for it", details={"mutex": str(path), "holder": holder})
    try:
        if leaf or not sys.stderr.isatty():
            try:
                lock.acquire(timeout=min(MOMENT_S, timeout))
                return
            except Timeout:
                pass
        sys.stderr.write(f"spark-git: waiting for {describe_mutex(name)}, held by {held_by(_read_owner(owner))}\n")
        sys.stderr.flush()
        lock.acquire(timeout=max(0.0, timeout - (time.monotonic() - t0)))
    except Timeout as e:
        holder = _read_owner(owner)
        raise Blocked(
            f"timed out after {timeout:.0f}s waiting for the {name!r} mutex" + (f" held by pid {holder.get('pid')} ({holder.get('command')})" if holder else ""),
            details={"mutex": str(path), "holder": holder},
        ) from e


@contextmanager
def try_mutex(layout: Layout, name: str) -> Iterator[bool]:
    """`mutex` without waiting: yields False at once when another process holds it."""
    from filelock import FileLock, Timeout

    layout.spark_dir.mkdir(parents=True, exist_ok=True)
    lock = FileLock(layout.spark_dir / f"{name}.lock", timeout=0, thread_local=False, fallback_to_soft=False, preserve_lock_file=True)
    try:
        lock.acquire(blocking=False)
    except Timeout:
        yield False
        return
    try:
        _write_owner(layout.spark_dir / f"{name}.owner.json")
        yield True
    finally:
        lock.release()


def _write_owner(owner: Path) -> None:
    # Informational only (who holds it, for messages and doctor); the flock is the truth.
    # Temp + rename (one temp name is enough: we hold the mutex): a kill mid-write must not leave an
    # empty file (found by scripts/chaos). No fsync: it is a hint, not state.
    tmp = owner.with_name(owner.name + ".tmp")
    try:
        tmp.write_text(json.dumps({"pid": os.getpid(), "command": " ".join(["spark-git", *sys.argv[1:7]]), "since": now()}))
        os.replace(tmp, owner)
    except OSError:
        pass


def _read_owner(owner: Path) -> dict[str, Any]:
    try:
        got = json.loads(owner.read_text())
    except (OSError, ValueError):
        return {}
    return got if isinstance(got, dict) else {}


# -- sessions and ownership ------------------------------------------------------------------


def session_from(given: str | None) -> str:
    """--session, else SPARK_SESSION_ID, else this terminal's own session (`default_session`)."""
    s = given or os.environ.get(SESSION_ENV) or default_session()
    if not s.strip() or any(ord(c) < 32 for c in s) or len(s) > 200:
        raise BadInput(f"bad session id {s!r}: use printable characters, at most 200")
    return s


def default_session() -> str:
    """The human's session when none is given: this user on this machine in this terminal
    (`human:dana@box:pts/3`), so the commands typed in one terminal are one session and a second
    terminal (a second coordinator) is another; without a terminal (a script, a client's shell), the
    user on this machine. SPARK_SESSION_ID overrides it (docs/decisions.md)."""
    import getpass
    import socket

    tty = next((os.ttyname(fd) for fd in (0, 1, 2) if os.isatty(fd)), None)
    where = f"{getpass.getuser()}@{socket.gethostname().split('.')[0]}"
    return f"human:{where}" + (f":{tty.removeprefix('/dev/')}" if tty else "")


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


def require_owner(what: str, owner: str, last_active_at: str | None, session: str | None, task: str | None = None, main: bool = False) -> None:
    """Blocked unless `session` owns `what` (the main-worktree lock when `main`, else `task`'s). The
    message names the owner and how long it has been idle; `next` is the human's takeover."""
    if session == owner:
        return
    idle = idle_for(last_active_at)
    why = shlex.quote(f"taking over from session {owner}")
    takeover = f"spark-git unlock main --force --why {why}" if main or task is None else f"spark-git lock break {task} --why {why}"
    if session is None or session == default_session():  # no session given: perhaps the owner, in another terminal
        raise Blocked(
            f"{what} is owned by session {owner} ({idle}), not by this terminal's session {session or default_session()}",
            hint=f"if you are that session (another terminal), pass --session {owner} or export {SESSION_ENV}={owner}; else take it over",
            next=[f"export {SESSION_ENV}={shlex.quote(owner)}", takeover],
            details={"owner": owner, "last_active_at": last_active_at, "session": session},
            task=task,
        )
    raise Blocked(
        f"{what} is owned by session {owner} ({idle}), not by {session}",
        hint="wait for the owner to finish, or ask a human to break the lock explicitly",
        next=[takeover],
        details={"owner": owner, "last_active_at": last_active_at, "session": session},
        task=task,
    )
