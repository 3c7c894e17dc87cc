"""`who` (each agent's commits, files and lines on the task branch) and `log` (the task's history with
agent, gate and approval annotations). Read only."""

from __future__ import annotations

from typing import Any

from spark_git.core.errors import Blocked
from spark_git.core.layout import Layout, task_name
from spark_git.core.model import Model
from spark_git.gates import attribution
from spark_git.ops.shared.taskfile import load_task
from spark_git.state.models import TaskFile
from spark_git.state.store import Store


class CommitView(Model):
    sha: str
    subject: str
    agent: str | None  # None: not attributable
    agent_source: str | None  # "note", "trailer", "prefix"
    files: list[str]
    added: int
    removed: int
    gates: list[dict] = []  # type: ignore[type-arg]  # gate evidence of this commit; a bare dict keeps the pinned schema
    approvals: list[dict] = []  # type: ignore[type-arg]  # a bare dict keeps the pinned schema
    landed: bool = False  # on the task branch through an agent merge: its tip, or a commit it brought


class AgentWork(Model):
    agent: str
    commits: list[str]
    files: list[str]
    added: int
    removed: int


class WhoData(Model):
    task: str
    task_branch: str
    base_commit: str
    head: str
    agents: list[AgentWork]
    unattributed: list[str]


class LogData(Model):
    task: str
    task_branch: str
    head: str
    commits: list[CommitView]  # newest first


def agent_of(message: str, objs: list[dict[str, Any]]) -> tuple[str | None, str | None]:
    for o in reversed(objs):
        if o.get("kind") == "attribution" and o.get("agent"):
            return o["agent"], "note"
    t = attribution.trailer_agent(message)
    if t:
        return t, "trailer"
    p = attribution.prefix_agent(message)
    if p:
        return p, "prefix"
    return None, None


def _task_and_head(store: Store, task: str) -> tuple[TaskFile, str]:
    """A live task from its lock; an ended one (cleanup, abandon) from the snapshot kept when it ended,
    whose head is recorded there (its branches may be gone; the commits are in the base or archived)."""
    snap = store.read_snapshot(task) if not store.has_task(task) else None
    if snap is not None and snap.task_json and snap.task_head:
        return TaskFile.model_validate(snap.task_json), snap.task_head
    tf = load_task(store, task)
    head = store.layout.git().branch_head(tf.task_branch)
    if head is None:
        raise Blocked(f"task branch {tf.task_branch} does not exist", task=task)
    return tf, head


def commits(layout: Layout, store: Store, task: str) -> tuple[TaskFile, str, list[CommitView]]:
    task = task_name(task)
    tf, head = _task_and_head(store, task)
    git = layout.git()
    rng = f"{tf.base_commit}..{head}"
    base_now = git.branch_head(tf.base_branch)
    if tf.state not in ("COMPLETE", "CLEANUP") and base_now and base_now != head and git.is_ancestor(base_now, head):
        rng = f"{base_now}..{head}"  # the task was rebased onto a newer base: its commits start there
    recs = git.log_fields(rng, ["%H", "%s", "%B"], "--first-parent")
    stats = git.numstat(rng)
    by_sha = store.notes_in(rng)
    views: list[CommitView] = []
    for sha, subject, body in recs:
        objs = by_sha.get(sha, [])
        agent, source = agent_of(body, objs)
        files = stats.get(sha, [])
        views.append(CommitView(
            sha=sha, subject=subject, agent=agent, agent_source=source, files=[f[2] for f in files],
            added=sum(f[0] for f in files), removed=sum(f[1] for f in files),
            gates=[{k: o.get(k) for k in ("gate", "passed", "exit_code", "duration_s", "tree", "log_path", "tests", "agent", "ran", "command", "reused_from")}
                   for o in objs if o.get("kind") == "gate"],
            approvals=[{k: o.get(k) for k in ("what", "by", "via", "time")} for o in objs if o.get("kind") == "approval"],
            # newest first along first parents: everything below a merge's tip came with it (or before it)
            landed=any(o.get("kind") == "landed" for o in objs) or any(v.landed for v in views),
        ))
    return tf, head, views


def who(layout: Layout, store: Store, task: str) -> WhoData:
    tf, head, views = commits(layout, store, task)
    agg: dict[str, AgentWork] = {}
    unattributed = []
    for v in reversed(views):  # oldest first
        if v.agent is None:
            unattributed.append(v.sha)
            continue
        w = agg.setdefault(v.agent, AgentWork(agent=v.agent, commits=[], files=[], added=0, removed=0))
        w.commits.append(v.sha)
        w.files += [f for f in v.files if f not in w.files]
        w.added += v.added
        w.removed += v.removed
    return WhoData(task=tf.task_name, task_branch=tf.task_branch, base_commit=tf.base_commit, head=head, agents=sorted(agg.values(), key=lambda w: w.agent), unattributed=unattributed)


def log(layout: Layout, store: Store, task: str) -> LogData:
    tf, head, views = commits(layout, store, task)
    return LogData(task=tf.task_name, task_branch=tf.task_branch, head=head, commits=views)
