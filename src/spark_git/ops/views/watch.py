"""`spark-git watch`: one snapshot of what the live view shows, computed from what `status` collects
(one `status` worth of work per refresh), with what waits on the human first. Pure data: the text frame
and the Textual app (cli/views/watch*.py) only draw it."""

from __future__ import annotations

from pathlib import Path

from spark_git.core.layout import Layout
from spark_git.core.model import Model
from spark_git.ops.shared.remote import LeaseView
from spark_git.ops.views import status as status_mod
from spark_git.ops.views.crossradar import TaskClash
from spark_git.ops.views.status import QueueRun, StatusData, TaskView
from spark_git.state import inflight
from spark_git.state.models import TaskFile, now, parse_time
from spark_git.state.store import Store

# The states in which the next step is the human's signed approval (`approve --plan` / `--changes`).
APPROVAL_STATES = {"SYNTHESIS": "--plan", "AWAITING_USER_APPROVAL": "--changes"}


class Attention(Model):
    """One thing waiting on the human, with the command that deals with it."""

    kind: str  # approval | conflict | failed gate | failed run | stale lease | problem
    task: str
    agent: str | None = None
    text: str
    next: str | None = None


class TaskRow(Model):
    task: str
    state: str
    owner: str | None
    idle_s: float | None  # seconds since the owner last acted
    agents: int
    queue_position: int | None


class AgentRow(Model):
    task: str
    agent: str
    doing: str  # running | idle | waiting for a merge | waiting for a review | <its reported status>
    client: str | None = None
    elapsed_s: float | None = None  # a run in flight: since it started
    window: str | None = None  # tmux TASK/AGENT of a run in flight
    last_words: str | None = None  # the agent's last report message


class RunningRow(Model):
    """A gate or a merge in flight (state/inflight.py)."""

    task: str
    kind: str  # gate | merge | queue (a candidate of the merge queue, gated or landing)
    name: str  # the gate, the agent being merged, or the candidate's tasks
    elapsed_s: float | None
    worktree: str | None = None
    log: str | None = None
    tail: list[str] = []  # the log's last lines


class RemoteView(Model):
    """Remote mode: the shared remote as last fetched, and the tasks other machines hold there."""

    remote: str
    machine: str  # this one
    fetched_at: str
    elsewhere: list[LeaseView]  # tasks held on another machine (state, holder, lease)


class WatchSnapshot(Model):
    at: str
    tasks_root: str
    attention: list[Attention]
    tasks: list[TaskRow]
    agents: list[AgentRow]
    running: list[RunningRow] = []  # gates and merges in flight, oldest first
    queue: list[str]  # tasks in the merge queue, next to land first
    pairs: list[TaskClash]  # the radar: live tasks whose work would conflict when both land
    warnings: list[str] = []
    remote: RemoteView | None = None  # remote mode only


def snapshot(layout: Layout, store: Store, *, with_radar: bool = True) -> WatchSnapshot:
    d = status_mod.collect(layout, with_radar=with_radar, ended=False)
    waiting = {t.task for t in d.tasks if t.state in APPROVAL_STATES and not _approved(store.read_task_here(t.task), t.head)}
    return of_status(d, now(), waiting)


def _approved(tf: TaskFile | None, head: str | None) -> bool:
    """The approval the task's state waits for is recorded: the plan's, or the changes' of this head."""
    if tf is None:
        return False
    if tf.state == "SYNTHESIS":
        return tf.plan_approval is not None and tf.plan_approval.approved
    return tf.checkpoint is not None and tf.checkpoint.approved and tf.checkpoint.commit_sha == head


def of_status(d: StatusData, at: str, waiting: set[str]) -> WatchSnapshot:
    """`waiting`: the live tasks whose next step is the human's approval, not yet given."""
    live = [t for t in d.tasks if t.state not in (None, "ENDED")]
    queued = sorted((t for t in live if t.queue_position), key=lambda t: t.queue_position or 0)
    return WatchSnapshot(
        at=at, tasks_root=d.tasks_root, attention=_attention(d, waiting), warnings=d.warnings,
        tasks=[TaskRow(task=t.task, state=t.state or "?", owner=t.session_id, idle_s=_since(t.last_active_at, at),
                       agents=len(t.agents), queue_position=t.queue_position) for t in live],
        agents=[row for t in live for row in _agents(t, at)],
        running=_running(live, d.queue_runs, at),
        queue=[t.task for t in queued], pairs=d.cross_conflicts,
        remote=RemoteView(remote=d.remote.remote, machine=d.remote.machine, fetched_at=at, elsewhere=[t for t in d.remote.tasks if not t.mine])
        if d.remote else None,
    )


def _running(live: list[TaskView], queue_runs: list[QueueRun], at: str) -> list[RunningRow]:
    """Gates and merges of each task, then the queue's candidates (under their first task)."""
    rows = [RunningRow(task=t.task, kind=r.kind, name=r.name, elapsed_s=_since(r.started_at, at), worktree=r.worktree, log=r.log, tail=r.tail)
            for t in live for r in t.running]
    return rows + [RunningRow(task=q.tasks[0], kind="queue", name=" + ".join(q.tasks), elapsed_s=_since(q.started_at, at)) for q in queue_runs]


def _attention(d: StatusData, waiting: set[str]) -> list[Attention]:
    out: list[Attention] = []
    for t in d.tasks:
        out += _task_attention(t, t.task in waiting)
    for c in d.cross_conflicts:
        out.append(Attention(kind="conflict", task=c.task, text=f"{c.task} and {c.other} would conflict when both land: {', '.join(c.files)}"))
    for r in d.remote.tasks if d.remote else []:
        if r.stale:
            out.append(Attention(kind="stale lease", task=r.task, text=f"lease of {r.task} expired ({r.machine})",
                                 next=f"spark-git lock break {r.task} --why 'lease expired'"))
    return out


def _task_attention(t: TaskView, waiting: bool) -> list[Attention]:
    out: list[Attention] = []
    if t.problem:
        out.append(Attention(kind="problem", task=t.task, text=t.problem, next=f"spark-git status {t.task}"))
    flag = APPROVAL_STATES.get(t.state or "")
    if flag and waiting:
        out.append(Attention(kind="approval", task=t.task, text=f"{t.task} waits for your approval ({t.state})",
                             next=f"spark-git approve {t.task} {flag}"))
    for c in t.radar.conflicts if t.radar else []:
        out.append(Attention(kind="conflict", task=t.task, agent=c.agent,
                             text=f"{c.agent} conflicts with {c.other or 'the task head'}: {', '.join(c.files)}"))
    if t.gate and t.gate.result == "failed":
        out.append(Attention(kind="failed gate", task=t.task, agent=t.gate.agent, text=f"gate {t.gate.token}", next=f"spark-git status {t.task}"))
    for a in t.agents:
        run = a.run or {}
        if run.get("state") == "done" and run.get("exit_code") not in (0, None):
            out.append(Attention(kind="failed run", task=t.task, agent=a.name,
                                 text=f"{a.name}'s {run.get('client')} run ended: {run.get('ended') or run.get('outcome')} (exit {run.get('exit_code')})",
                                 next=f"spark-git agent run {t.task} {a.name}"))
    return out


def _agents(t: TaskView, at: str) -> list[AgentRow]:
    rows = []
    merging = {r.name: r for r in t.running if r.kind == "merge"}
    for a in t.agents:
        run = a.run or {}
        words = a.report.feedback if a.report else None
        if a.name in merging:
            rows.append(AgentRow(task=t.task, agent=a.name, doing="being merged", client=run.get("client"),
                                 elapsed_s=_since(merging[a.name].started_at, at), last_words=words))
            continue
        if run.get("state") == "running":
            rows.append(AgentRow(task=t.task, agent=a.name, doing="running", client=run.get("client"),
                                 elapsed_s=_since(run.get("started_at"), at), window=run.get("window"), last_words=words))
            continue
        status = a.report.status if a.report else "NEW"
        doing = {"COMPLETE": "waiting for a merge" if a.ahead else "idle", "WAITING": "waiting for a review"}.get(status, "idle" if status == "NEW" else status)
        rows.append(AgentRow(task=t.task, agent=a.name, doing=doing, client=run.get("client"), last_words=words))
    return rows


def _since(stamp: str | None, at: str) -> float | None:
    try:
        return max(0.0, (parse_time(at) - parse_time(stamp or "")).total_seconds())
    except ValueError:
        return None


def watched_dirs(layout: Layout) -> list[Path]:
    """Where a change means a new frame: the tasks root (a task starts or ends), each task's directory
    (task.json), its logs (a gate or merge starts or ends) and each agent's (status.json, run.json),
    the queue's."""
    root = layout.tasks_root
    dirs = [root, root / ".queue", *(layout.task_dir(n) for n in layout.task_names())]
    dirs += [a for d in dirs[2:] for a in [*sorted((d / "agents").glob("*")), d / "agents", d / "logs"]]
    return [d for d in dirs if d.is_dir()]


def log_of(layout: Layout, task: str) -> Path | None:
    """The log `l` follows: a gate running now, else the newest of the task's logs (gates, set-up) and
    its agents' run streams."""
    running = [r.log for r in inflight.live(layout.logs_dir(task)) if r.log]
    if running:
        return Path(running[-1])
    found = [*layout.logs_dir(task).glob("*.log"), *(layout.task_dir(task) / "agents").glob("*/runs/*.jsonl")]
    return max(found, key=_mtime, default=None)


def _mtime(p: Path) -> float:
    try:
        return p.stat().st_mtime
    except OSError:  # removed since it was listed
        return 0.0
