"""`who` (each agent's commits, files and lines on the task branch) and `log` (the task's history with
agent, gate and approval annotations). Read only."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from spark_git.core.errors import Blocked
from spark_git.core.layout import Layout, task_name
from spark_git.gates import attribution
from spark_git.ops.taskfile import load_task
from spark_git.state.backends import open_store


class CommitView(BaseModel):
    sha: str
    subject: str
    agent: str | None  # None: not attributable
    agent_source: str | None  # "note", "trailer", "prefix"
    files: list[str]
    added: int
    removed: int
    gates: list[dict] = []  # type: ignore[type-arg]  # gate evidence of this commit; a bare dict keeps the pinned schema
    approvals: list[dict] = []  # type: ignore[type-arg]  # a bare dict keeps the pinned schema
    landed: bool = False  # tip of an agent merge


class AgentWork(BaseModel):
    agent: str
    commits: list[str]
    files: list[str]
    added: int
    removed: int


class WhoData(BaseModel):
    task: str
    task_branch: str
    base_commit: str
    head: str
    agents: list[AgentWork]
    unattributed: list[str]


class LogData(BaseModel):
    task: str
    task_branch: str
    head: str
    commits: list[CommitView]  # newest first


def _agent_of(message: str, objs: list[dict[str, Any]]) -> tuple[str | None, str | None]:
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


def commits(layout: Layout, task: str) -> tuple[str, str, str, list[CommitView]]:
    task = task_name(task)
    store = open_store(layout)
    tf = load_task(store, task)
    git = layout.git()
    head = git.branch_head(tf.task_branch)
    if head is None:
        raise Blocked(f"task branch {tf.task_branch} does not exist", task=task)
    rng = f"{tf.base_commit}..{head}"
    base_now = git.branch_head(tf.base_branch)
    if tf.state not in ("COMPLETE", "CLEANUP") and base_now and base_now != head and git.is_ancestor(base_now, head):
        rng = f"{base_now}..{head}"  # the task was rebased onto a newer base: its commits start there
    recs = git.log_fields(rng, ["%H", "%s", "%B"], "--first-parent")
    stats = git.numstat(rng)
    by_sha = store.notes_in(rng)
    views = []
    for sha, subject, body in recs:
        objs = by_sha.get(sha, [])
        agent, source = _agent_of(body, objs)
        files = stats.get(sha, [])
        views.append(CommitView(
            sha=sha, subject=subject, agent=agent, agent_source=source, files=[f[2] for f in files],
            added=sum(f[0] for f in files), removed=sum(f[1] for f in files),
            gates=[{k: o.get(k) for k in ("gate", "passed", "exit_code", "duration_s", "tree", "log_path", "tests", "agent")} for o in objs if o.get("kind") == "gate"],
            approvals=[{k: o.get(k) for k in ("what", "by", "via", "time")} for o in objs if o.get("kind") == "approval"],
            landed=any(o.get("kind") == "landed" for o in objs),
        ))
    return task, tf.task_branch, head, views


def who(layout: Layout, task: str) -> WhoData:
    task, branch, head, views = commits(layout, task)
    tf = load_task(layout, task)
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
    return WhoData(task=task, task_branch=branch, base_commit=tf.base_commit, head=head, agents=sorted(agg.values(), key=lambda w: w.agent), unattributed=unattributed)


def log(layout: Layout, task: str) -> LogData:
    task, branch, head, views = commits(layout, task)
    return LogData(task=task, task_branch=branch, head=head, commits=views)
