"""`spark-git status`: a read-only view of every task. Branch heads come from one `for-each-ref`;
the per-worktree git calls run in parallel threads (each its own process), and none runs whose answer
is already known (a task head still at its base commit has 0 commits beyond it)."""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from spark_git import protocol
from spark_git.clients.loading import hook_warnings
from spark_git.core import gatebox
from spark_git.core.errors import BadInput, CorruptState, SparkError
from spark_git.core.git import Git, Sha, branch_ref
from spark_git.core.layout import Layout
from spark_git.core.model import Model
from spark_git.core.proc import pid_alive
from spark_git.gates import command as gate_command
from spark_git.gates import evidence
from spark_git.gates import reports as gate_reports
from spark_git.gates.reports import GateReports
from spark_git.ops.queue import forge
from spark_git.ops.queue.forge import ForgeView
from spark_git.ops.shared import agentruns as agent_record
from spark_git.ops.shared import liveagents, mainlock, radar, remote, signed
from spark_git.ops.shared.radar import Radar
from spark_git.ops.shared.remote import RemoteStatusData
from spark_git.ops.views import crossradar
from spark_git.ops.views.crossradar import TaskClash
from spark_git.state import inflight, recordmac
from spark_git.state.backends import open_store
from spark_git.state.inflight import InFlight
from spark_git.state.locks import idle_for
from spark_git.state.models import TaskFile
from spark_git.state.queuelog import FlakyGate, QueueLog
from spark_git.state.queuerefs import QUEUE_PREFIX
from spark_git.state.report_evidence import AgentStatus
from spark_git.state.store import Store

NEVER_REPORTED = "never reported"  # the flag of an agent without a report yet
TAIL = 3  # lines of a running gate's log shown (status, watch)


class _View(Model):
    pass  # one base for status's views


class AgentView(_View):
    name: str
    role: str
    branch: str
    worktree: str
    exists: bool
    head: str | None
    ahead: int | None  # commits on the agent branch not on the task branch
    behind: int | None  # commits on the task branch not on the agent branch
    dirty: list[str] | None
    report: AgentStatus | None = None
    flags: list[str] = []  # never reported, ERROR/BLOCKED, WORKING without update, stale approval
    run: dict[str, Any] | None = None  # `agent run`: the live run (state running) or the last one's outcome (state done)


class GateView(_View):
    """The task's last gate run, from its audit trail: what `status` shows of the evidence."""

    gate: str | None  # "build" / "final"
    result: str | None  # "passed" / "failed"
    commit: str | None
    agent: str | None = None  # whose merge it gated
    at: str | None = None
    reports: GateReports | None = None  # the JUnit counts, the coverage and the thresholds missed
    token: str = ""  # one short line: `build passed: 12 tests, cov 87%`


class Running(InFlight):
    """A gate or a merge running now (state/inflight.py), with its log's last lines."""

    tail: list[str] = []


class QueueRun(_View):
    """The merge queue's candidate holding this task, being gated or landed now."""

    tasks: list[str]  # the candidate's tasks, in landing order
    started_at: str
    landing: bool = False  # passed: its tip is about to be put on the base


class GivenBack(_View):
    """The queue gave this head back (a conflict, a changed patch, a failed final gate): why, and the way on."""

    result: str  # blocked | failed
    reason: str
    at: str
    next: list[str] = []


class NextState(_View):
    state: str
    blockers: list[str]


class TaskView(_View):
    task: str
    state: str | None = None
    title: str | None = None
    session_id: str | None = None
    idle: str | None = None
    last_active_at: str | None = None
    task_branch: str | None = None
    head: str | None = None
    base_branch: str | None = None
    commits_beyond_base: int | None = None
    worktree: str | None = None
    worktree_exists: bool = False
    dirty: list[str] | None = None
    provisioning: str | None = None
    agents: list[AgentView] = []
    problem: str | None = None  # corrupt or missing lock
    final_state: str | None = None  # an ENDED task: CLEANUP (landed, cleaned up) or ABANDONED, from its audit snapshot
    risk: str | None = None
    variant: str | None = None
    protocol: str | None = None
    next_states: list[NextState] = []  # legal next states and what blocks each
    gate: GateView | None = None  # the last gate run, with what it parsed from JUnit/coverage reports
    decisions: list[dict[str, Any]] = []  # the human's checkpoint decisions, oldest first (task.json checkpoint_history)
    queue_position: int | None = None  # 1 = next to land (`spark-git queue`)
    given_back: GivenBack | None = None  # the queue's last word on this very head, when it did not land it
    flaky_gates: list[FlakyGate] = []  # the queue's final gate failed, then passed on a retry, on a candidate holding this task
    radar: Radar | None = None  # would the unmerged branches conflict (None: not checked, e.g. --no-radar)
    forge: ForgeView | None = None  # landing through the forge (`complete --via`): its PR/MR as the forge answered
    running: list[Running] = []  # gates and merges in flight now, oldest first
    queue_run: QueueRun | None = None  # the queue gates or lands it now, in this candidate


class StatusData(_View):
    tasks_root: str
    main_lock: mainlock.MainLockData
    tasks: list[TaskView]
    warnings: list[str] = []  # e.g. agent worktrees that will not load spark-git's hooks
    remote: RemoteStatusData | None = None  # remote mode: every machine's locks on the shared remote, leases, stale ones
    ended_hidden: list[str] = []  # ended tasks left out (`status --all` lists them)
    cross_conflicts: list[TaskClash] = []  # pairs of live tasks whose work would conflict when both land (no task named)
    queue_runs: list[QueueRun] = []  # the merge queue's candidates being gated or landed now


def _dirty(path: Path) -> list[str] | None:
    if not path.is_dir():
        return None
    # Reads only: no index refresh, so status never takes an index.lock an agent's `git add` would trip on.
    return [str(e) for e in Git(path, env={"GIT_OPTIONAL_LOCKS": "0"}).status()]


def collect(layout: Layout, only: str | None = None, *, with_radar: bool = True, ended: bool = True) -> StatusData:
    """Every task (or `only`); ended tasks only with `ended` (or when asked for by name)."""
    data = _collect(layout, open_store(layout), only, with_radar)
    if not ended and only is None:
        data.ended_hidden = [t.task for t in data.tasks if t.state == "ENDED"]
        data.tasks = [t for t in data.tasks if t.state != "ENDED"]
    return data


def _collect(layout: Layout, store: Store, only: str | None, with_radar: bool) -> StatusData:
    if only and not layout.task_dir(only).is_dir():
        raise BadInput(f"no task {only!r} under {layout.tasks_root}", hint="`spark-git status` lists the tasks", next=["spark-git status"], task=only)
    names = [only] if only else layout.task_names()
    git = layout.git()
    views: list[TaskView] = []
    live: list[tuple[TaskView, TaskFile]] = []
    jobs: list[_Job] = []
    with ThreadPoolExecutor(max_workers=4) as pool:
        # Every git process starts as soon as what it needs is known: the branch heads and each
        # worktree's `git status` while the task files are read, the head comparisons after.
        heads_job = pool.submit(git.refs, "refs/heads/", QUEUE_PREFIX) if names else None
        for name in names:
            view, tf = _task_view(store, name)
            views.append(view)
            if tf is not None:
                live.append((view, tf))
                jobs += _status_jobs(pool, view, tf)
                jobs.append((view, "gate", pool.submit(last_gate, store, name)))
        heads = heads_job.result() if heads_job else {}
        queue = [ref[len(QUEUE_PREFIX):].partition("-")[2] for ref in sorted(heads) if ref.startswith(QUEUE_PREFIX)]
        qlog = store.read_queue_log() if live else None
        outcomes = {o.task: o for o in qlog.outcomes} if qlog else {}
        runs = _queue_runs(qlog)
        for view, tf in live:
            jobs += _head_jobs(pool, git, view, tf, heads)
            view.queue_position = queue.index(view.task) + 1 if view.task in queue else None
            view.queue_run = next((r for r in runs if view.task in r.tasks), None)
            view.flaky_gates = [f for f in qlog.flaky if view.task in f.tasks] if qlog else []
            o = outcomes.get(view.task)
            if o is not None and o.result != "landed" and view.queue_position is None and o.head == heads.get(branch_ref(tf.task_branch)):
                view.given_back = GivenBack(result=o.result, reason=o.reason, at=o.at, next=o.next)
        for view, tf in live:  # while the git processes run
            _protocol_view(store, view, tf)
        for obj, attr, fut in jobs:
            val = fut.result()
            for k, v in (zip(attr, val, strict=True) if isinstance(attr, tuple) else [(attr, val)]):
                setattr(obj, k, v)
    for view, _ in live:
        for av in view.agents:
            av.flags += uncommitted_flag(av.report.status if av.report else None, av.ahead, [d[3:] for d in av.dirty or []])
    cross: list[TaskClash] = []
    if with_radar:
        _radars(git, layout.repo.common_dir / "objects", [v for v, _ in live])
        if only is None:
            cross = _cross(git, layout.repo.common_dir / "objects", [v for v, _ in live])
    _forge(layout, store, live)
    agent_wts = [Path(w) for _, tf in live for w in (e.worktree for e in tf.agents.values())]
    warnings = hook_warnings(layout.main_worktree, agent_wts) + gatebox.gate_warnings(layout.config.gates)
    warnings += [f"task {tf.task_name} runs under protocol {tf.protocol} (fixed when it started); the config now says {layout.config.protocol}"
                 for _, tf in live if tf.protocol and tf.protocol != layout.config.protocol]
    warnings += signed.unguarded(layout.main_worktree)  # the approval key's reach (issue 23)
    warnings += signed.approvers_note(layout) if live else []  # who may approve: a file only a landing changes (issue 31)
    warnings += liveagents.unboxed(store)  # clients started by hand in agent worktrees (issue 31)
    elsewhere = layout.tasks_elsewhere() if not only else None
    if elsewhere:
        warnings.append(f"{len(elsewhere[1])} task(s) under {elsewhere[0]}, not under the configured tasks_root {layout.tasks_root}: "
                        f"{', '.join(elsewhere[1])} (set tasks_root back to manage them, or finish them first)")
    return StatusData.model_construct(tasks_root=str(layout.tasks_root), main_lock=_main_lock(store), tasks=views, warnings=warnings,
                                      remote=_remote(layout, store, live), cross_conflicts=cross, queue_runs=runs)


def _remote(layout: Layout, store: Store, live: list[tuple[TaskView, TaskFile]]) -> RemoteStatusData | None:
    """Remote mode: every machine's locks; a task kept here whose remote lock is another's says so."""
    if not layout.config.sync.remote:
        return None
    data = remote.status(store)
    held = {t.task: t for t in data.tasks}
    for view, _tf in live:
        lock = held.get(view.task)
        if lock is None:
            view.problem = f"no lock on remote {data.remote} (ended, or taken away): this copy is stale"
        elif not lock.mine:
            why = f" by `lock break`: {lock.broken_why}" if lock.broken_why else ""
            view.problem = f"held on remote {data.remote} by machine {lock.machine} (session {lock.session}){why}; this copy is stale"
    return data


def _forge(layout: Layout, store: Store, live: list[tuple[TaskView, TaskFile]]) -> None:
    """Tasks landing through the forge: the open PR/MR asked about (a merge seen is recorded)."""
    for view, tf in live:
        if tf.forge is not None:
            view.forge = forge.observe(layout, store, tf)
            if view.forge is not None and view.forge.state == "merged" and view.state != "COMPLETE":
                view.state, view.next_states = "COMPLETE", []  # recorded just now


_Job = tuple[BaseModel, "str | tuple[str, str]", "Future[Any]"]


def _queue_runs(qlog: QueueLog | None) -> list[QueueRun]:
    """The queue's candidates in flight (a killed drain's are not: their pid is gone)."""
    cands = [c for c in [*(qlog.running if qlog else []), qlog.candidate if qlog else None] if c is not None and pid_alive(c.pid)]
    seen: dict[tuple[str, ...], QueueRun] = {}
    for c in cands:
        tasks = tuple(p.task for p in c.parts)
        seen.setdefault(tasks, QueueRun(tasks=list(tasks), started_at=c.started_at, landing=c.landing is not None))
    return list(seen.values())


def _task_view(store: Store, name: str) -> tuple[TaskView, TaskFile | None]:
    """The view of one task from its files (no git); the TaskFile when the task is live."""
    layout = store.layout
    view = TaskView.model_construct(task=name)
    try:
        tf = store.read_task_here(name)
    except CorruptState as e:
        view.problem = e.message
        return view, None
    if tf is None:
        view.worktree_exists = layout.task_worktree(name).is_dir()
        if view.worktree_exists:
            view.problem = "task worktree exists without a lock (task.json): nothing owns it"
        else:
            view.state = "ENDED"  # cleaned up or abandoned; only the audit files remain
            done = store.read_snapshot(name)
            view.final_state = done.final_state if done is not None else None
        return view, None
    view.__dict__.update(
        state=tf.state, title=tf.title, session_id=tf.session_id, idle=idle_for(tf.last_active_at),
        last_active_at=tf.last_active_at, task_branch=tf.task_branch, head=None, base_branch=tf.base_branch,
        worktree=tf.worktree, worktree_exists=Path(tf.worktree).is_dir(), provisioning=tf.provisioning,
        risk=tf.risk, variant=tf.variant, protocol=protocol.protocol_of(layout, tf), decisions=tf.checkpoint_history,
        running=[Running(**r.model_dump(), tail=gate_command.log_tail(r.log, TAIL)) for r in inflight.live(layout.logs_dir(name))],
    )
    trail = store.read_audit(name) if tf.agents else None
    for a, entry in tf.agents.items():
        av = AgentView.model_construct(
            name=a, role=entry.role, branch=entry.branch, worktree=entry.worktree, exists=Path(entry.worktree).is_dir(),
            head=None, ahead=None, behind=None, dirty=None,
        )
        try:
            av.report = store.read_status(name, a)
        except CorruptState as e:
            view.problem = e.message
        av.run = agent_record.last_run(layout, trail, name, a)
        view.agents.append(av)
    return view, tf


def _status_jobs(pool: ThreadPoolExecutor, view: TaskView, tf: TaskFile) -> list[_Job]:
    """`git status` of the task's worktree and of each agent's, submitted to `pool`."""
    jobs: list[_Job] = [(view, "dirty", pool.submit(_dirty, Path(tf.worktree)))]
    for av, entry in zip(view.agents, tf.agents.values(), strict=True):
        jobs.append((av, "dirty", pool.submit(_dirty, Path(entry.worktree))))
    return jobs


def _head_jobs(pool: ThreadPoolExecutor, git: Git, view: TaskView, tf: TaskFile, heads: dict[str, Sha]) -> list[_Job]:
    """Sets the heads; the comparisons still needing git are submitted to `pool`, the others (a
    head still at its base, an agent at the task head) answered here."""
    jobs: list[_Job] = []
    view.head = head = heads.get(branch_ref(tf.task_branch))
    if head == tf.base_commit:
        view.commits_beyond_base = 0
    elif head:
        jobs.append((view, "commits_beyond_base", pool.submit(git.count, f"{tf.base_commit}..{head}")))
    for av, entry in zip(view.agents, tf.agents.values(), strict=True):
        av.head = heads.get(branch_ref(entry.branch))
        if av.head and head:
            if av.head == head:
                av.ahead = av.behind = 0
            else:
                jobs.append((av, ("ahead", "behind"), pool.submit(git.ahead_behind, branch_ref(entry.branch), branch_ref(tf.task_branch))))
    return jobs


def last_gate(store: Store, task: str) -> GateView | None:
    trail = store.read_audit(task)
    if not trail or not trail.build_verifications:
        return None
    e = trail.build_verifications[-1]
    rep = GateReports.model_validate(e["reports"]) if e.get("reports") else None
    detail = gate_reports.token(rep)
    return GateView.model_construct(
        gate=e.get("gate"), result=evidence.result_of(e), commit=e.get("commit"), agent=e.get("agent"), at=e.get("at"), reports=rep,
        token=f"{e.get('gate')} {evidence.result_of(e)}" + (f": {detail}" if detail else ""),
    )


def _radars(git: Git, objects: Path, views: list[TaskView]) -> None:
    """Every task's conflict radar, from one git process for all of them (none without unmerged work)."""
    tasks = []
    for v in views:
        known = [(a.name, a.head, a.ahead, a.behind or 0) for a in v.agents if a.head and a.ahead is not None]
        tasks.append((radar.pairs(v.head, known) if v.head else [], {a.name: a.behind or 0 for a in v.agents}))
    try:
        found = radar.scan_many(git, objects, tasks)
    except SparkError as e:  # status never fails because of the radar
        found = [Radar(checked=[], note=f"conflict radar failed: {e.message}") for _ in views]
    for v, r in zip(views, found, strict=True):
        v.radar = r


def _cross(git: Git, objects: Path, views: list[TaskView]) -> list[TaskClash]:
    work = []
    for v in views:
        tips = ([v.head] if v.head and v.commits_beyond_base else []) + [a.head for a in v.agents if a.head and a.ahead]
        if tips:
            work.append((v.task, tips))
    try:
        return crossradar.between(git, objects, work)
    except SparkError:  # status never fails because of the radar
        return []


def _main_lock(store: Store) -> mainlock.MainLockData:
    try:
        return mainlock.view(store, mainlock.read(store))
    except CorruptState as e:
        return mainlock.MainLockData(held=True, path=str(store.layout.main_lock()), reason=e.message)


def uncommitted_flag(report: str | None, ahead: int | None, dirty: list[str] | None) -> list[str]:
    """COMPLETE with nothing committed and a dirty tree: the work the report claims is not on the branch
    (a client whose `git commit` failed, e.g. without an identity)."""
    if report != "COMPLETE" or ahead != 0 or not dirty:
        return []
    shown = ", ".join(dirty[:3]) + (f" and {len(dirty) - 3} more" if len(dirty) > 3 else "")
    return [f"COMPLETE with nothing committed and {len(dirty)} uncommitted file(s): {shown}"]


def _protocol_view(store: Store, view: TaskView, tf: TaskFile) -> None:
    """Next legal states with their blockers, and the agents that need a look."""
    from spark_git.state.locks import human_duration
    from spark_git.state.models import now, parse_time

    problem = protocol.inconsistency(tf, recordmac.load_key(store.layout))
    if problem:
        view.problem = f"task.json was edited by hand ({problem}); every command refuses it: run `spark-git doctor {tf.task_name}`"
        return
    layout = store.layout
    limit = layout.config.stale_minutes * 60
    t_now = parse_time(now())
    light = view.protocol == "light"  # no protocol walk: agents need not report, states are not advanced by hand
    for av in view.agents:
        r = av.report
        if r is None or r.status == "NEW":
            if not light:
                av.flags.append(NEVER_REPORTED)
            continue
        if r.status in ("ERROR", "BLOCKED"):
            av.flags.append(f"{r.status}: {r.feedback or '(no message)'}")
        if r.status == "WORKING":
            age = (t_now - parse_time(r.updated_at)).total_seconds()
            if age > limit:
                av.flags.append(f"WORKING without an update for {human_duration(age)}")
        if av.role == "reviewer" and r.decision == "APPROVED" and view.head and r.last_review_sha != view.head and not \
                protocol.approval_holds(layout.git(), branch_ref(tf.base_branch), r.last_review_sha, r.last_review_patch_id, view.head):
            av.flags.append(f"approval stale: reviewed {(r.last_review_sha or '?')[:12]}, task head is {view.head[:12]}")
    if light:
        return
    try:
        for state, unmet in protocol.blockers(store, tf, None, signed.plan_problem).items():
            view.next_states.append(NextState.model_construct(state=state, blockers=[str(u) for u in unmet]))
    except SparkError as e:  # status never fails because of one task's protocol view
        view.problem = f"cannot evaluate the protocol conditions: {e.message}"
