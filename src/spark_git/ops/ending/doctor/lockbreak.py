"""`spark-git lock break`: a human's explicit takeover of a task lock (or removal of the main lock),
logged in the audit trail and a git note; a missing or corrupt task.json is rebuilt from git."""

from __future__ import annotations

import os
from pathlib import Path

from spark_git.core.errors import BadInput, Blocked, CorruptState
from spark_git.core.git import Git, branch_ref
from spark_git.core.layout import Layout, task_name
from spark_git.core.model import Model
from spark_git.core.proc import pid_alive
from spark_git.ops.ending.doctor.scan import parses
from spark_git.ops.shared import mainlock
from spark_git.ops.shared.remote import break_remote
from spark_git.ops.shared.taskfile import role_of, save_task
from spark_git.state import audit, chain, notes, recordmac
from spark_git.state.backends import open_store
from spark_git.state.files import create_exclusive, read_optional
from spark_git.state.locks import idle_for, mutex, task_mutex_name
from spark_git.state.models import AgentEntry, MainLock, State, TaskFile, Transition, now
from spark_git.state.store import Store


class LockBreakData(Model):
    task: str
    previous_owner: str | None
    new_owner: str | None
    idle: str | None
    why: str
    rebuilt: bool = False  # task.json was missing or corrupt and was rebuilt from git + audit trail
    corrupt_kept_as: str | None = None
    noted_on: str | None = None  # commit the git note was added to (None: audit trail only)
    broken_by: str | None = None  # the session that broke it
    broken_at: str | None = None
    by_user: str | None = None  # the OS user and pid of the process that broke it
    by_pid: int | None = None
    owner_alive: bool | None = None  # a process of the owner was working on it then (None: cannot tell)
    owner_pid: int | None = None
    dry_run: bool = False  # --dry-run: what breaking it would do (new_owner, rebuilt, corrupt_kept_as); nothing was changed


def _who() -> dict[str, object]:
    import getpass

    try:
        user: str | None = getpass.getuser()
    except (OSError, KeyError):
        user = None
    return {"broken_at": now(), "by_user": user, "by_pid": os.getpid()}


def _task_owner_alive(layout: Layout, task: str) -> tuple[bool, int | None]:
    """Whether a process holds the task's mutex right now (an operation of the owner in flight): the
    session itself is no process; its commands are."""
    try:
        with mutex(layout, task_mutex_name(task), timeout=0.05):
            return False, None
    except Blocked as e:
        holder = (e.details or {}).get("holder") or {}
        return True, holder.get("pid") if isinstance(holder, dict) else None


def _pid_alive(pid: int | None) -> bool | None:
    return None if pid is None else pid_alive(pid)


def break_lock(layout: Layout, task: str, *, why: str, session: str | None, dry_run: bool = False) -> LockBreakData:
    """A human's explicit takeover of a task lock: the owner becomes `session`; logged (audit + note)."""
    if not why or not why.strip():
        raise BadInput("--why is required: breaking a lock is logged with the reason")
    store = open_store(layout)
    if task == "main":
        return _break_main_lock(layout, store, why, session, dry_run)
    task = task_name(task)
    if session is None:
        raise BadInput("give the new owner: --session ID (or SPARK_SESSION_ID)", hint="lock break hands the task to your session")
    if layout.config.sync.remote:
        return LockBreakData(**break_remote(store, task, why, session), **_who())
    git = layout.git()
    aside: Path | None = None
    alive, owner_pid = _task_owner_alive(layout, task)
    who = {**_who(), "owner_alive": alive, "owner_pid": owner_pid}
    with mutex(layout, task_mutex_name(task)):
        path = layout.task_json(task)
        try:
            tf = read_optional(path, TaskFile)
        except CorruptState:
            aside = path.with_name(f"task.json.corrupt-{now().replace(':', '')}")
            tf = None
        if dry_run:
            return _would_break(layout, git, task, tf, aside, why, session, who)
        if tf is not None:
            prev, idle = tf.session_id, idle_for(tf.last_active_at)
            tf.session_id = session
            save_task(store, tf)
            rebuilt = False
        else:
            tf = _rebuild(layout, git, task, session)
            if aside is not None:
                os.replace(path, aside)
            if not create_exclusive(path, tf):
                raise BadInput(f"{path} appeared while rebuilding it; run lock break again")
            prev, idle, rebuilt = None, None, True
        head = git.branch_head(tf.task_branch)
    audit.event(layout, task, "lock_broken", session, previous_owner=prev, new_owner=session, idle=idle, why=why, rebuilt=rebuilt,
                corrupt_kept_as=str(aside) if aside else None, **who)
    noted = None
    if head is not None:
        notes.append(layout, head, {"kind": "lock_break", "task": task, "previous_owner": prev, "new_owner": session, "why": why, **who})
        noted = head
    return LockBreakData(task=task, previous_owner=prev, new_owner=session, idle=idle, why=why, rebuilt=rebuilt,
                         corrupt_kept_as=str(aside) if aside else None, noted_on=noted, broken_by=session, **who)


def _would_break(layout: Layout, git: Git, task: str, tf: TaskFile | None, aside: Path | None, why: str, session: str,
                 who: dict[str, object]) -> LockBreakData:
    """lock break --dry-run: the same reads and refusals, nothing written (a rebuild is only checked)."""
    if tf is None:
        tf = _rebuild(layout, git, task, session)  # refuses as the real run would; builds in memory only
        prev, idle, rebuilt = None, None, True
    else:
        prev, idle, rebuilt = tf.session_id, idle_for(tf.last_active_at), False
    head = git.branch_head(tf.task_branch)
    return LockBreakData(task=task, previous_owner=prev, new_owner=session, idle=idle, why=why, rebuilt=rebuilt,
                         corrupt_kept_as=str(aside) if aside else None, noted_on=head, broken_by=session, dry_run=True, **who)


def _break_main_lock(layout: Layout, store: Store, why: str, session: str | None, dry_run: bool = False) -> LockBreakData:
    before = mainlock.read(store) if layout.main_lock().exists() and parses(layout.main_lock(), MainLock) else None
    who = {**_who(), "owner_pid": before.pid if before else None, "owner_alive": _pid_alive(before.pid) if before else None}
    if dry_run:
        aside = layout.main_lock().with_name(f"task.json.corrupt-{now().replace(':', '')}") if layout.main_lock().exists() and before is None else None
        return LockBreakData(task="main", previous_owner=before.session_id if before else None, new_owner=None, idle=idle_for(before.last_active_at) if before else None,
                             why=why, corrupt_kept_as=str(aside) if aside else None, broken_by=session, dry_run=True, **who)
    if layout.main_lock().exists() and before is None:  # corrupt: keep it beside
        aside = layout.main_lock().with_name(f"task.json.corrupt-{now().replace(':', '')}")
        os.replace(layout.main_lock(), aside)
        audit.event(layout, "main", "main_lock_broken", session, why=why, corrupt_kept_as=str(aside), **who)
        return LockBreakData(task="main", previous_owner=None, new_owner=None, idle=None, why=why, corrupt_kept_as=str(aside), broken_by=session, **who)
    mainlock.unlock(store, session, force=True, why=why)
    audit.event(layout, "main", "main_lock_broken", session, why=why, previous_owner=before.session_id if before else None, **who)
    return LockBreakData(task="main", previous_owner=before.session_id if before else None, new_owner=None,
                         idle=idle_for(before.last_active_at) if before else None, why=why, broken_by=session, **who)


def _rebuild(layout: Layout, git: Git, task: str, session: str) -> TaskFile:
    """A lock for a task whose task.json is gone or corrupt, from git (branches, worktrees) and the audit trail."""
    branch = layout.task_branch(task)
    head = git.branch_head(branch)
    if head is None:
        raise BadInput(f"task {task!r} has no branch {branch}: nothing to adopt", hint=f"see `spark-git archive list {task}`")
    base = layout.base_branch()
    base_commit = git.out("merge-base", head, branch_ref(base)) if git.branch_head(base) else head
    log: list[Transition] = []
    try:
        trail = audit.load(layout, task)
    except CorruptState:
        trail = None
    for t in (trail.state_transitions if trail else []):
        try:
            log.append(Transition.model_validate({**t, "hash": None}))
        except ValueError:
            continue
    chain.seal(log, recordmac.load_key(layout), task)  # a log rebuilt by a human's explicit command starts a new chain, MAC'd
    state = log[-1].to if log else "INIT"
    agents = {}
    adir = layout.task_dir(task) / "agents"
    for d in sorted(adir.iterdir()) if adir.is_dir() else []:
        b = layout.agent_branch(task, d.name)
        if git.branch_head(b) is not None:
            agents[d.name] = AgentEntry(name=d.name, branch=b, worktree=str(layout.agent_worktree(task, d.name)), role=role_of(layout, d.name))
    return TaskFile(task_name=task, session_id=session, state=state if state in tuple(State) else State.INIT,
                    base_branch=base, base_commit=base_commit, task_branch=branch, worktree=str(layout.task_worktree(task)),
                    provisioning="done", agents=agents, transition_log=log)
