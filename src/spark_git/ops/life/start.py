"""`start`: take the task lock, create the task and agent branches and worktrees; a start of the
same session that died half-way is finished from what its lock records."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from spark_git import protocol
from spark_git.clients.loading import hook_warnings
from spark_git.core import faults
from spark_git.core.errors import BadInput, Blocked, SparkError
from spark_git.core.git import Git, branch_ref
from spark_git.core.layout import Layout, agent_name, task_name
from spark_git.core.model import Model
from spark_git.guard import identity
from spark_git.ops.shared.provision import ProvisionReport
from spark_git.ops.shared.taskfile import role_of, start_mutex_name, updating
from spark_git.ops.shared.worktrees import Created, Progress, checkout_new, ensure_worktree, quiet, setup_new, undo
from spark_git.state import chain, recordmac
from spark_git.state.backends import open_store
from spark_git.state.locks import WORKTREES, mint_session, require_owner
from spark_git.state.models import AgentEntry, TaskFile, Transition
from spark_git.state.report_evidence import AgentStatus
from spark_git.state.store import Store


class WorktreeInfo(Model):
    agent: str | None
    branch: str
    path: str


class StartData(Model):
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
    warnings: list[str] = []  # e.g. agent worktrees that will not load spark-git's hooks


def slug_from_title(title: str, exists: Callable[[str], bool], today: datetime | None = None) -> str:
    """`Add OAuth2 support` → `add-oauth2-support-20261122`; `-2`, `-3`… on collision."""
    slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:30].strip("-") or "task"
    base = f"{slug}-{(today or datetime.now(UTC)):%Y%m%d}"
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
    progress: Progress = quiet,
    no_setup: bool = False,
) -> StartData:
    store = open_store(layout)
    git = layout.git()
    if task is None:
        if not title:
            raise BadInput("give a task name, or --title to derive one")
        task = slug_from_title(title, lambda n: layout.task_dir(n).exists() or store.has_task(n) or git.branch_head(layout.task_branch(n)) is not None)
    task = task_name(task)
    agents = list(dict.fromkeys(agent_name(a) for a in agents))  # validated, de-duplicated, ordered
    _check_branch_names(layout, git, task, agents)

    minted = session is None
    session = session or mint_session()
    # One start of a task at a time: a second start of the same session would otherwise "resume" the
    # first one's half-made worktrees (remove its "initializing" checkouts) while it runs. A killed
    # start's mutex is released by the kernel, so the next start resumes it.
    with store.mutex(start_mutex_name(task)):
        existing = store.read_task(task)  # CorruptState (exit 3, with the path) if unreadable
        if existing is not None:
            return _resume(store, existing, session, minted, progress, no_setup)
        return _create(store, git, task, agents, base, session, title, minted, progress, no_setup)


def _create(store: Store, git: Git, task: str, agents: list[str], base: str | None, session: str, title: str | None,
            minted: bool, progress: Progress, no_setup: bool) -> StartData:
    layout = store.layout
    _retire_ended(store, task)
    tf = _new_task(store, git, task, agents, base, session, title)
    layout.task_dir(task).mkdir(parents=True, exist_ok=True)
    if not store.create_task(tf):
        winner = store.read_task(task)
        owner = winner.session_id if winner else "unknown"
        raise Blocked(f"task {task!r} was just started by session {owner}", details={"owner": owner}, task=task)
    store.audit(task, "state_transitions", {"from": None, "to": "INIT", "session_id": session}, session=session)
    identity.forget_claims(layout.repo.common_dir, task)  # worktrees hook worktree-create made for an earlier task of this name
    faults.point("start-after-lock")
    return _provision(store, tf, minted, created_lock=True, progress=progress, no_setup=no_setup)


def _resume(store: Store, existing: TaskFile, session: str, minted: bool, progress: Progress, no_setup: bool) -> StartData:
    task = existing.task_name
    require_owner(f"task {task!r}", existing.session_id, existing.last_active_at, session, task=task)
    protocol.check_consistent(store, existing)  # a hand-edited task is refused here too
    if existing.provisioning == "done":
        if not store.layout.task_worktree(task).is_dir():
            raise _inconsistent(store.layout, task, "its lock exists but its task worktree does not")
        return _start_data(store.layout, existing, minted, resumed=True)
    # A start of this session died half-way: finish what the lock records.
    progress(f"resuming the interrupted start of {task}")
    return _provision(store, existing, minted, created_lock=False, progress=progress, no_setup=no_setup)


def _new_task(store: Store, git: Git, task: str, agents: list[str], base: str | None, session: str, title: str | None) -> TaskFile:
    """The lock a new start takes, once nothing else claims the task's worktrees and branches."""
    layout = store.layout
    base_branch = base or layout.base_branch()
    base_commit = git.branch_head(base_branch) or git.rev_parse(base_branch)  # the branch first: a tag of its name hides nothing
    if base_commit is None:
        raise BadInput(f"base {base_branch!r} is not a commit in this repository", hint="pass --base REF or commit something first")
    stray = [p for p in [layout.task_worktree(task), *(layout.agent_worktree(task, a) for a in agents)] if p.exists()]
    heads = git.refs("refs/heads/")
    taken = [b for b in [layout.task_branch(task), *(layout.agent_branch(task, a) for a in agents)] if branch_ref(b) in heads]
    if stray or taken:
        _blocked_by_racer(store, task, session)
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
        protocol=layout.config.protocol,  # fixed for this task: a config change affects new tasks only
        rules=protocol.config_rules(layout),
        created_branches=[layout.task_branch(task), *(layout.agent_branch(task, a) for a in agents)],  # none existed: checked above
        agents={a: AgentEntry(name=a, branch=layout.agent_branch(task, a), worktree=str(layout.agent_worktree(task, a)), role=role_of(layout, a)) for a in agents},
    )
    chain.append(tf.transition_log, Transition(from_state=None, to="INIT", session_id=session, reason="spark-git start"), recordmac.load_key(layout), tf.task_name)
    return tf


def _retire_ended(store: Store, task: str) -> None:
    """A name used again: the ended task's records move to `<task>/history/<created_at>/` (one audit
    trail, one snapshot per task)."""
    snap = store.read_snapshot(task)  # CorruptState (exit 3, path named) if unreadable
    if snap is None or snap.final_state not in ("CLEANUP", "ABANDONED"):
        return
    where = store.retire_records(task, (snap.created_at or "ended").replace(":", ""))
    if where is not None:
        store.event(task, "earlier_task_records_moved", None, to=where, final_state=snap.final_state)


def _blocked_by_racer(store: Store, task: str, session: str) -> None:
    """A start racing ours may have created its lock, branches and worktrees after we looked for the
    lock: then they are its work, not a stray directory or someone else's branch (exit 3, not 2)."""
    racer = store.read_task(task)
    if racer is None:
        return
    require_owner(f"task {task!r}", racer.session_id, racer.last_active_at, session, task=task)
    raise Blocked(f"task {task!r} is being started by another process of this session", details={"owner": session}, task=task)


def _check_branch_names(layout: Layout, git: Git, task: str, agents: list[str]) -> None:
    names = [layout.task_branch(task), *(layout.agent_branch(task, a) for a in agents)]
    base = layout.config.base_branch
    for b in names:
        if b in ("main", "master", "HEAD") or (base and b == base):
            raise BadInput(f"bad task name {task!r}: its branch {b!r} is the base branch", task=task)
        if not git.is_valid_branch_name(b):
            raise BadInput(f"bad task name {task!r}: {b!r} is not a valid branch name (git check-ref-format --branch)", task=task)
    _check_collisions(layout, task, agents)


def _check_collisions(layout: Layout, task: str, agents: list[str]) -> None:
    """Refuses names whose branches the templates could also give to another task or agent: cleanup,
    abandon and doctor would then act on a branch that is not this task's."""
    tb = layout.task_branch(task)
    clash = [f"{tb!r} is also the branch of agent {a!r} of task {t!r}" for t, a in layout.agent_branch_owners(tb)]
    for agent in agents:
        ab = layout.agent_branch(task, agent)
        if ab == tb:
            clash.append(f"agent {agent!r} would share the task branch {tb!r}")
        clash += [f"{ab!r} (agent {agent!r}) is also the branch of agent {a!r} of task {t!r}" for t, a in layout.agent_branch_owners(ab) if (t, a) != (task, agent)]
        clash += [f"{ab!r} (agent {agent!r}) is the task branch of task {t!r}, which exists" for t in layout.task_branch_owners(ab)
                  if t != task and layout.task_dir(t).exists()]
    names = [tb] + [layout.agent_branch(task, a) for a in agents]
    clash += [f"{a!r} and {b!r} cannot both exist (git cannot hold a branch and a branch under it)"
              for i, a in enumerate(names) for b in names[i + 1:] if a.startswith(b + "/") or b.startswith(a + "/")]
    if clash:
        raise BadInput(
            f"cannot start task {task!r}: the branch templates let two things share a branch: " + "; ".join(clash),
            hint=f"choose other names, or branch templates that cannot overlap (task_branch_template = {layout.config.task_branch_template!r}, "
                 f"agent_branch_template = {layout.config.agent_branch_template!r})",
            details={"collisions": clash}, task=task,
        )


def _inconsistent(layout: Layout, task: str, what: str) -> Blocked:
    return Blocked(
        f"task {task!r} is inconsistent: {what}",
        hint="spark-git does not guess: look at the task directory, then abandon the task or repair it by hand",
        next=[f"spark-git doctor {task}", f"spark-git abandon {task} --why '...'"],
        details={"task_dir": str(layout.task_dir(task))},
        task=task,
    )


def _provision(store: Store, tf: TaskFile, minted: bool, *, created_lock: bool, progress: Progress, no_setup: bool = False) -> StartData:
    layout, task = store.layout, tf.task_name
    plan = [(None, tf.task_branch, layout.task_worktree(task))] + [
        (a, e.branch, Path(e.worktree)) for a, e in tf.agents.items()
    ]
    created = Created(lock=task if created_lock else None)
    try:
        store.keep_notes_on_rewrite()  # before any commit of the task can carry a note
        with store.mutex(WORKTREES):
            git = layout.git()
            registered = {wt.path.resolve(): wt for wt in git.worktrees()}
            heads = git.refs("refs/heads/")  # one call instead of a rev-parse per branch
            for i, (_agent, branch, path) in enumerate(plan, 1):
                progress(f"[{i}/{len(plan)}] worktree {path} on branch {branch}")
                ensure_worktree(git, tf.base_commit, branch, path, registered, created, heads, checkout=False)
        checkout_new(store, created.worktrees, progress)
        for agent in tf.agents:
            store.create_status(AgentStatus(agent=agent, task=task))
        with updating(store, task, tf.session_id) as cur:
            cur.provisioning = "done"
            tf = cur
    except BaseException as e:
        undo(store, created)
        if isinstance(e, SparkError) and created.lock is not None:
            e.hint = (e.hint + "; " if e.hint else "") + "nothing was left behind: the branches, worktrees and lock this call created were removed"
        raise
    store.event(task, "started", tf.session_id, agents=list(tf.agents), base_commit=tf.base_commit, base_branch=tf.base_branch)
    # After the lock says "done": a failing setup command keeps the worktrees (reported, not undone).
    reports = setup_new(store, task, [(a, p) for a, _, p in plan if p in created.worktrees], no_setup, progress)
    return _start_data(layout, tf, minted, resumed=False).model_copy(update={"provisioning": reports})


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
        warnings=hook_warnings(layout.main_worktree, [Path(w.path) for w in wts[1:]]),
    )
