"""Tasks: the ownership lock, `start`, `agent add` (`abandon` and `cleanup` live in cleanup.py)."""

from __future__ import annotations

import os
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterator

from pydantic import BaseModel

from spark_git.state import audit
from spark_git.core import faults
from spark_git.state import notes
from spark_git.core.errors import BadInput, Blocked, SparkError
from spark_git.core.git import ZERO_SHA, Git, branch_ref
from spark_git.core.layout import Layout, agent_name, task_name
from spark_git.state.locks import WORKTREES, mint_session, mutex, require_owner, task_mutex_name
from spark_git.state.models import AgentEntry, AgentStatus, AgentAddition, TaskFile, now
from spark_git.ops.provision import ProvisionReport
from spark_git.protocol import check_consistent
from spark_git.state.files import create_exclusive, read_model, read_optional, write_atomic

Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


# -- reading and updating task.json ------------------------------------------------------------


def load_task(layout: Layout, task: str, *, check: bool = True) -> TaskFile:
    """`check=False` is the escape hatch for `doctor`/`audit`: read a task.json whose state its
    transition_log cannot explain (hand-edited); every other command refuses it (exit 3)."""
    path = layout.task_json(task)
    try:
        tf = read_model(path, TaskFile)
    except FileNotFoundError:
        raise BadInput(f"no task {task!r}: {path} does not exist", hint="`spark-git status` lists the tasks", next=["spark-git status"], task=task) from None
    if check:
        check_consistent(layout, tf)
    return tf


def save_task(layout: Layout, tf: TaskFile) -> None:
    tf.last_active_at = now()
    write_atomic(layout.task_json(tf.task_name), tf)


@contextmanager
def updating(layout: Layout, task: str, session: str | None, *, owner: bool = True) -> Iterator[TaskFile]:
    """Lock → re-read → (check owner) → let the caller change it → atomic write. Nothing is written if
    the body raises."""
    with mutex(layout, task_mutex_name(task)):
        tf = load_task(layout, task)
        if owner:
            require_owner(f"task {task!r}", tf.session_id, tf.last_active_at, session, task=task)
        yield tf
        save_task(layout, tf)


def role_of(layout: Layout, agent: str) -> str:
    if agent in layout.config.agent_roles:
        return layout.config.agent_roles[agent]
    if agent.endswith("-reviewer"):
        return "reviewer"
    if agent.endswith("-updater"):
        return "updater"
    return "other"


# -- start --------------------------------------------------------------------------------------


class WorktreeInfo(BaseModel):
    agent: str | None
    branch: str
    path: str


class StartData(BaseModel):
    task: str
    session_id: str
    session_minted: bool
    resumed: bool
    state: str
    base_branch: str
    base_commit: str
    task_worktree: str
    worktrees: list[WorktreeInfo]
    export: str
    provisioning: list[ProvisionReport] = []  # copied files and setup runs of the worktrees created by this call


@dataclass
class _Created:
    branches: list[tuple[str, str]] = field(default_factory=list)  # (ref, sha)
    worktrees: list[Path] = field(default_factory=list)
    lock: Path | None = None


def slug_from_title(title: str, exists: Callable[[str], bool], today: datetime | None = None) -> str:
    """`Add OAuth2 support` → `add-oauth2-support-20261122`; `-2`, `-3`… on collision."""
    slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:30].strip("-") or "task"
    base = f"{slug}-{(today or datetime.now(timezone.utc)):%Y%m%d}"
    name, n = base, 1
    while exists(name):
        n += 1
        name = f"{base}-{n}"
    return name


def start(
    layout: Layout,
    task: str | None,
    agents: list[str],
    *,
    base: str | None = None,
    session: str | None = None,
    title: str | None = None,
    progress: Progress = _quiet,
    no_setup: bool = False,
) -> StartData:
    git = layout.git()
    if task is None:
        if not title:
            raise BadInput("give a task name, or --title to derive one")
        task = slug_from_title(title, lambda n: layout.task_dir(n).exists() or git.branch_head(layout.task_branch(n)) is not None)
    task = task_name(task)
    agents = list(dict.fromkeys(agent_name(a) for a in agents))  # validated, de-duplicated, ordered
    _check_branch_names(layout, git, task, agents)

    minted = session is None
    session = session or mint_session()
    tj = layout.task_json(task)
    existing = read_optional(tj, TaskFile)  # CorruptState (exit 3, with the path) if unreadable

    if existing is not None:
        require_owner(f"task {task!r}", existing.session_id, existing.last_active_at, session, task=task)
        check_consistent(layout, existing)  # a hand-edited task is refused here too
        if existing.provisioning == "done":
            if not layout.task_worktree(task).is_dir():
                raise _inconsistent(layout, task, "its lock exists but its task worktree does not")
            return _start_data(layout, existing, minted, resumed=True)
        # A start of this session died half-way: finish what the lock records.
        progress(f"resuming the interrupted start of {task}")
        return _provision(layout, existing, minted, created_lock=False, progress=progress, no_setup=no_setup)

    base_branch = base or layout.base_branch()
    base_commit = git.rev_parse(base_branch)
    if base_commit is None:
        raise BadInput(f"base {base_branch!r} is not a commit in this repository", hint="pass --base REF or commit something first")
    stray = [p for p in [layout.task_worktree(task), *(layout.agent_worktree(task, a) for a in agents)] if p.exists()]
    heads = git.refs("refs/heads/")
    taken = [b for b in [layout.task_branch(task), *(layout.agent_branch(task, a) for a in agents)] if branch_ref(b) in heads]
    if stray or taken:
        _blocked_by_racer(layout, task, session)
    if stray:
        raise _inconsistent(layout, task, f"worktree directories exist without a lock: {', '.join(map(str, stray))}")
    if taken:
        raise BadInput(
            f"cannot start task {task!r}: branch {', '.join(taken)} already exists for something else",
            hint="choose another task name, or delete the branch if it is really unused",
            task=task,
        )

    tf = TaskFile(
        task_name=task,
        title=title,
        session_id=session,
        base_branch=base_branch,
        base_commit=base_commit,
        task_branch=layout.task_branch(task),
        worktree=str(layout.task_worktree(task)),
        required_agents=agents,
        agents={a: AgentEntry(name=a, branch=layout.agent_branch(task, a), worktree=str(layout.agent_worktree(task, a)), role=role_of(layout, a)) for a in agents},
    )
    tf.transition_log.append(_init_transition(session))
    layout.task_dir(task).mkdir(parents=True, exist_ok=True)
    if not create_exclusive(tj, tf):
        winner = read_optional(tj, TaskFile)
        owner = winner.session_id if winner else "unknown"
        raise Blocked(f"task {task!r} was just started by session {owner}", details={"owner": owner}, task=task)
    audit.record(layout, task, "state_transitions", {"from": None, "to": "INIT", "session_id": session}, session=session)
    faults.point("start-after-lock")
    return _provision(layout, tf, minted, created_lock=True, progress=progress, no_setup=no_setup)


def _blocked_by_racer(layout: Layout, task: str, session: str) -> None:
    """A start racing ours may have created its lock, branches and worktrees after we looked for the
    lock: then they are its work, not a stray directory or someone else's branch (exit 3, not 2)."""
    racer = read_optional(layout.task_json(task), TaskFile)
    if racer is None:
        return
    require_owner(f"task {task!r}", racer.session_id, racer.last_active_at, session, task=task)
    raise Blocked(f"task {task!r} is being started by another process of this session", details={"owner": session}, task=task)


def _init_transition(session: str):
    from spark_git.state.models import Transition

    return Transition(from_state=None, to="INIT", session_id=session, reason="spark-git start")


def _check_branch_names(layout: Layout, git: Git, task: str, agents: list[str]) -> None:
    names = [layout.task_branch(task), *(layout.agent_branch(task, a) for a in agents)]
    base = layout.config.base_branch
    for b in names:
        if b in ("main", "master", "HEAD") or (base and b == base):
            raise BadInput(f"bad task name {task!r}: its branch {b!r} is the base branch", task=task)
        if not git.is_valid_branch_name(b):
            raise BadInput(f"bad task name {task!r}: {b!r} is not a valid branch name (git check-ref-format --branch)", task=task)


def _inconsistent(layout: Layout, task: str, what: str) -> Blocked:
    return Blocked(
        f"task {task!r} is inconsistent: {what}",
        hint="spark-git does not guess: look at the task directory, then abandon the task or repair it by hand",
        next=[f"spark-git doctor {task}", f"spark-git abandon {task} --why '...'"],
        details={"task_dir": str(layout.task_dir(task))},
        task=task,
    )


def _provision(layout: Layout, tf: TaskFile, minted: bool, *, created_lock: bool, progress: Progress, no_setup: bool = False) -> StartData:
    task = tf.task_name
    plan = [(None, tf.task_branch, layout.task_worktree(task))] + [
        (a, e.branch, Path(e.worktree)) for a, e in tf.agents.items()
    ]
    created = _Created(lock=layout.task_json(task) if created_lock else None)
    try:
        notes.ensure_rewrite_config(layout)  # before any commit of the task can carry a note
        with mutex(layout, WORKTREES):
            git = layout.git()
            registered = {wt.path.resolve(): wt for wt in git.worktrees()}
            heads = git.refs("refs/heads/")  # one call instead of a rev-parse per branch
            for i, (agent, branch, path) in enumerate(plan, 1):
                progress(f"[{i}/{len(plan)}] worktree {path} on branch {branch}")
                _ensure_worktree(git, tf.base_commit, branch, path, registered, created, heads, checkout=False)
        _checkout_new(layout, created.worktrees, progress)
        for agent in tf.agents:
            sp = layout.agent_status(task, agent)
            if not sp.exists():
                write_atomic(sp, AgentStatus(agent=agent, task=task))
        with updating(layout, task, tf.session_id) as cur:
            cur.provisioning = "done"
            tf = cur
    except BaseException as e:
        _undo(layout, created)
        if isinstance(e, SparkError) and created.lock is not None:
            e.hint = (e.hint + "; " if e.hint else "") + "nothing was left behind: the branches, worktrees and lock this call created were removed"
        raise
    audit.event(layout, task, "started", tf.session_id, agents=list(tf.agents), base_commit=tf.base_commit, base_branch=tf.base_branch)
    # After the lock says "done": a failing setup command keeps the worktrees (reported, not undone).
    reports = _setup_new(layout, task, [(a, p) for a, _, p in plan if p in created.worktrees], no_setup, progress)
    return _start_data(layout, tf, minted, resumed=False).model_copy(update={"provisioning": reports})


def _setup_new(layout: Layout, task: str, new: list[tuple[str | None, Path]], no_setup: bool, progress: Progress) -> list[ProvisionReport]:
    from spark_git.ops.provision import failure_summary, provision

    reports = [provision(layout, task, agent, path, no_setup=no_setup, progress=progress) for agent, path in new]
    if any(r.failed for r in reports):
        audit.event(layout, task, "setup_failed", None, summary=failure_summary(reports))
    return reports


def _checkout_new(layout: Layout, paths: list[Path], progress: Progress) -> None:
    """Checks out worktrees registered with `--no-checkout --lock initializing`, in parallel: only
    registering a worktree needs the repo-wide mutex, and the checkout is most of the time on a large
    repo. Does what `git worktree add` does after registering (`reset --hard`, the post-checkout hook);
    a worktree is unlocked only when complete, so a kill leaves it "initializing" for the resume."""
    if not paths:
        return
    from concurrent.futures import ThreadPoolExecutor

    hook = layout.git().hook_path("post-checkout")

    def one(path: Path) -> None:
        wt = Git(path)
        wt.run("reset", "--hard", "--quiet", "--no-recurse-submodules")
        if hook is not None:
            wt.run("hook", "run", "post-checkout", "--", ZERO_SHA, wt.out("rev-parse", "HEAD"), "1")
        progress(f"checked out {path}")

    with ThreadPoolExecutor(max_workers=min(len(paths), max(2, os.cpu_count() or 2))) as pool:
        for _ in pool.map(one, paths):
            pass
    # `worktree unlock` reads every worktree's admin dir, which a concurrent `worktree add` may be
    # half-way through writing ("failed to read .../commondir"): it needs the mutex too.
    with mutex(layout, WORKTREES):
        git = layout.git()
        for path in paths:
            git.worktree_unlock(path)


def _ensure_worktree(
    git: Git, base_commit: str, branch: str, path: Path, registered: dict, created: _Created, heads: dict | None = None, *, checkout: bool = True
) -> None:
    ref = branch_ref(branch)
    if (ref not in heads) if heads is not None else (git.rev_parse(ref) is None):
        git.update_ref(ref, base_commit, ZERO_SHA, message=f"spark-git start: create {branch}")
        created.branches.append((ref, base_commit))
    wt = registered.get(path.resolve())
    if wt is not None and wt.locked and "initializing" in wt.extra.get("locked", ""):
        # `git worktree add` was killed mid-checkout: the directory holds no work of anyone's yet.
        git.run("worktree", "remove", "--force", "--force", str(path))
        wt = None
    if wt is not None:
        if wt.branch != branch:
            raise Blocked(f"{path} is a worktree on {wt.branch or 'a detached HEAD'}, expected branch {branch}")
        return
    if path.exists() and any(path.iterdir()):
        raise Blocked(f"{path} exists and is not a registered worktree; move it away first")
    path.parent.mkdir(parents=True, exist_ok=True)
    if checkout:
        git.worktree_add(path, branch)
    else:  # _checkout_new checks it out and unlocks it
        git.worktree_add(path, branch, checkout=False, lock_reason="initializing")
    created.worktrees.append(path)


def _undo(layout: Layout, created: _Created) -> None:
    """Best effort: remove exactly what this call created, newest first."""
    git = layout.git()
    with mutex(layout, WORKTREES):
        for path in reversed(created.worktrees):
            try:  # twice --force: ours may still be locked "initializing"
                git.run("worktree", "remove", "--force", "--force", str(path))
            except SparkError:
                pass
        for ref, sha in reversed(created.branches):
            try:
                git.delete_ref(ref, sha, message="spark-git start: undo")
            except SparkError:
                pass
    if created.lock is not None:
        created.lock.unlink(missing_ok=True)


def _start_data(layout: Layout, tf: TaskFile, minted: bool, resumed: bool) -> StartData:
    wts = [WorktreeInfo(agent=None, branch=tf.task_branch, path=str(layout.task_worktree(tf.task_name)))]
    wts += [WorktreeInfo(agent=a, branch=e.branch, path=e.worktree) for a, e in tf.agents.items()]
    return StartData(
        task=tf.task_name,
        session_id=tf.session_id,
        session_minted=minted,
        resumed=resumed,
        state=tf.state,
        base_branch=tf.base_branch,
        base_commit=tf.base_commit,
        task_worktree=wts[0].path,
        worktrees=wts,
        export=f"export SPARK_SESSION_ID={tf.session_id}",
    )


# -- agent add ---------------------------------------------------------------------------------


class AgentAddData(BaseModel):
    task: str
    agent: str
    branch: str
    worktree: str
    role: str
    state: str
    from_commit: str
    provisioning: list[ProvisionReport] = []


def add_agent(
    layout: Layout,
    task: str,
    agent: str,
    *,
    why: str,
    session: str | None,
    role: str | None = None,
    guard: Callable[[TaskFile], None] | None = None,
    progress: Progress = _quiet,
    no_setup: bool = False,
) -> AgentAddData:
    task = task_name(task)
    agent = agent_name(agent)
    if not why.strip():
        raise BadInput("--why needs a justification; it is recorded in task.json")
    if role is not None and role not in ("reviewer", "updater", "other"):
        raise BadInput(f"bad role {role!r}: use reviewer, updater or other")
    branch = layout.agent_branch(task, agent)
    path = layout.agent_worktree(task, agent)
    with updating(layout, task, session) as tf:
        if agent in tf.agents:
            raise BadInput(f"agent {agent!r} is already part of task {task!r}", details={"worktree": tf.agents[agent].worktree}, task=task)
        if guard is not None:
            guard(tf)
        git = layout.git()
        if not git.is_valid_branch_name(branch):
            raise BadInput(f"bad agent name {agent!r}: {branch!r} is not a valid branch name", task=task)
        if git.branch_head(branch) is not None:
            raise BadInput(f"branch {branch} already exists for something else", task=task)
        head = git.branch_head(tf.task_branch)
        if head is None:
            raise Blocked(f"task branch {tf.task_branch} does not exist", next=[f"spark-git doctor {task}"], task=task)
        created = _Created()
        progress(f"worktree {path} on branch {branch}")
        try:
            with mutex(layout, WORKTREES):
                _ensure_worktree(git, head, branch, path, {}, created)
            write_atomic(layout.agent_status(task, agent), AgentStatus(agent=agent, task=task))
        except BaseException:
            _undo(layout, created)
            raise
        entry = AgentEntry(name=agent, branch=branch, worktree=str(path), role=role or role_of(layout, agent))
        tf.agents[agent] = entry
        tf.agent_additions.append(AgentAddition(agent=agent, state=tf.state, why=why))
    audit.event(layout, task, "agent_added", session, agent=agent, state=tf.state, why=why, from_commit=head)
    reports = _setup_new(layout, task, [(agent, path)], no_setup, progress)
    return AgentAddData(task=task, agent=agent, branch=branch, worktree=str(path), role=entry.role, state=tf.state, from_commit=head, provisioning=reports)
