"""`spark-git hook session-start`: after a restart or a context compaction, tell the session which
tasks it owns, where each stands, what it waits for and what to run next — or, for an agent, which
agent it is, where it works and how it reports."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from spark_git.core import caller
from spark_git.core.errors import CorruptState
from spark_git.core.layout import Layout
from spark_git.core.model import Model
from spark_git.core.paths import repo_around
from spark_git.guard import identity
from spark_git.state.models import TaskFile
from spark_git.state.store import Store


class TaskCheckpoint(Model):
    task: str
    state: str
    title: str | None = None
    task_branch: str
    head: str | None
    waiting_for: str | None  # "plan approval", "change approval of commit X", or None
    task_worktree: str
    agent_worktrees: dict[str, str]
    next: list[str]


class AgentCheckpoint(Model):
    """What a session that is an agent is told: who it is, where it works, how it reports."""

    task: str
    agent: str
    role: str
    title: str | None = None
    worktree: str
    branch: str
    task_state: str
    task_branch: str
    task_head: str | None
    attribution: str  # [attribution] mode: how its commits are attributed
    next: list[str]
    goal: str = ""  # task.md's objective and the agent's part of the plan (state/taskmd.py goal_of)


class SessionStartData(Model):
    sessions: list[str]
    tasks: list[TaskCheckpoint]
    problems: list[str] = []
    agent: AgentCheckpoint | None = None  # the session is this agent: `tasks` is empty (never the owner's)


def _waiting(tf: TaskFile, head: str | None) -> str | None:
    if tf.state == "SYNTHESIS":
        pa = tf.plan_approval or (tf.checkpoint if tf.checkpoint and tf.checkpoint.type == "plan" else None)
        if not (pa and pa.approved):
            return "plan approval (the human approves task.md's plan before IMPLEMENTATION)"
    if tf.state == "AWAITING_USER_APPROVAL":
        cp = tf.checkpoint
        if not (cp and cp.type == "changes" and cp.approved and cp.commit_sha == head):
            return f"change approval of commit {head or '?'} (the human runs `spark-git approve {tf.task_name} --changes`)"
    return None


def _next(tf: TaskFile, waiting: str | None) -> list[str]:
    t = tf.task_name
    by_state = {
        "IMPLEMENTATION": [f"spark-git merge {t} --all"],
        "VALIDATION": [f"spark-git status {t}"],
        "REVIEW": [f"spark-git status {t}"],
        "AWAITING_USER_APPROVAL": [f"spark-git approve {t} --changes", f"spark-git complete {t}"],  # approve: the human, on a terminal
        "COMPLETE": [f"spark-git cleanup {t}"],
    }
    nxt = [f"cd {shlex.quote(tf.worktree)}", f"spark-git status {t}"]
    nxt += [c for c in by_state.get(tf.state, []) if c not in nxt]
    if waiting and tf.state == "SYNTHESIS":  # waiting for the plan approval: the human's command (`waiting` says so in words)
        nxt.append(f"spark-git approve {t} --plan")
    return nxt


def collect(layout: Layout, store: Store, sessions: set[str]) -> SessionStartData:
    git = layout.git()
    names = store.task_names()
    heads = git.refs("refs/heads/") if names else {}
    out = SessionStartData(sessions=sorted(sessions), tasks=[])
    for name in names:
        try:
            tf = store.read_task(name)
        except CorruptState as e:
            out.problems.append(e.message)
            continue
        if tf is None or tf.session_id not in sessions:
            continue
        head = heads.get(f"refs/heads/{tf.task_branch}")
        waiting = _waiting(tf, head)
        out.tasks.append(
            TaskCheckpoint(
                task=name, state=tf.state, title=tf.title, task_branch=tf.task_branch, head=head, waiting_for=waiting,
                task_worktree=tf.worktree, agent_worktrees={a: e.worktree for a, e in tf.agents.items()}, next=_next(tf, waiting),
            )
        )
    return out


def for_agent(layout: Layout, store: Store, sessions: set[str], task: str, agent: str) -> SessionStartData:
    """An agent's session start: its own task, worktree, branch and commands, none of the owner's."""
    out = SessionStartData(sessions=sorted(sessions), tasks=[])
    try:
        tf = store.read_task(task)
    except CorruptState as e:
        out.problems.append(e.message)
        return out
    entry = tf.agents.get(agent) if tf is not None else None
    if tf is None or entry is None:
        out.problems.append(f"this session is agent {agent} of task {task}, which " + ("has ended" if tf is None else "has no such agent"))
        return out
    from spark_git.state.taskmd import goal_of, task_md_sections

    md = layout.task_md(task)
    head = layout.git().branch_head(tf.task_branch)
    out.agent = AgentCheckpoint(
        goal=goal_of(task_md_sections(md.read_text(errors="replace")), agent) if md.is_file() else "",
        task=task, agent=agent, role=entry.role, title=tf.title, worktree=entry.worktree, branch=entry.branch,
        task_state=tf.state, task_branch=tf.task_branch, task_head=head, attribution=layout.config.attribution.mode,
        next=[f"cd {shlex.quote(entry.worktree)}", f"spark-git status {task}", f"spark-git sync {task} --agent {agent}",
              f"spark-git report {task} --agent {agent} --status COMPLETE"],
    )
    return out


def agent_of(layout: Layout, session: object, cwd: Path) -> tuple[str, str] | None:
    """(task, agent) when this session is an agent: launched in (or made for) an agent worktree
    (identity.caller), or marked as one by its environment or a process it runs under (core/caller)."""
    repo = repo_around(cwd)
    place = identity.caller(repo, session if isinstance(session, str) else None, str(cwd)) if repo is not None else None
    if place is not None and place.kind == "agent" and place.task and place.agent:
        return place.task, place.agent
    found = [(s.task, s.agent) for s in caller.signs(layout.tasks_root, os.environ, ()) if s.task and s.agent]
    return found[0] if found else None


def from_event(event_cwd: str | None) -> Path:
    return Path(event_cwd) if event_cwd else Path.cwd()


def remember_launch(session: object, cwd: Path) -> None:
    """Records the directory a client session started in (identity.remember), when it starts inside
    a spark-git repo; the hook then judges the session by it wherever it `cd`s."""
    repo = repo_around(cwd) if isinstance(session, str) and session else None
    if repo is not None and isinstance(session, str):
        try:
            identity.remember(repo.common, session, cwd)
        except OSError:
            pass  # a read-only .git: the hook falls back to CLAUDE_PROJECT_DIR and cwd


def session_text(d: SessionStartData) -> str:
    """What a session is told at its start, as plain text (each client wraps it its own way); "" says nothing."""
    if d.agent is not None:
        return _agent_text(d.agent, d.problems)
    if not d.tasks and not d.problems:
        return ""
    lines = [f"spark-git: session {', '.join(d.sessions)} owns {len(d.tasks)} task(s)."]
    for t in d.tasks:
        lines.append(f"- task {t.task}" + (f" ({t.title})" if t.title else "") + f": state {t.state}, branch {t.task_branch} at {(t.head or '?')[:12]}")
        lines.append(f"  waiting for: {t.waiting_for or 'nothing from the human'}")
        lines.append(f"  task worktree: {t.task_worktree}")
        for a, p in t.agent_worktrees.items():
            lines.append(f"  agent {a}: {p}")
        lines.append("  next: " + " ; ".join(t.next))
    for p in d.problems:
        lines.append(f"- problem: {p}")
    return "\n".join(lines)


_ATTRIBUTION = {
    "add": "spark-git adds the \"[{a}] \" prefix and Spark-Agent/Spark-Task trailers to them when it merges",
    "require": "each commit subject must start with \"[{a}] \" (or carry a Spark-Agent: {a} trailer), or the merge is refused",
    "off": "they are not stamped; write \"[{a}] summary\" subjects anyway",
}


def _agent_text(me: AgentCheckpoint, problems: list[str]) -> str:
    return "\n".join([*agent_lines(me), *(f"- problem: {p}" for p in problems)])


def agent_lines(me: AgentCheckpoint) -> list[str]:
    """What an agent is told of itself: which agent it is, its worktree and branch, its goal, how it
    commits and reports. Its session start (every client) and its brief (`spark-git brief`) both carry them."""
    a, t = me.agent, me.task
    goal = " ".join(me.goal.split())
    return [
        f"spark-git: you are agent {a} (role {me.role}) of task {t}" + (f" ({me.title})" if me.title else "") + ", not the coordinator.",
        f"- your worktree: {me.worktree} (branch {me.branch}); work and commit only there",
        *([f"- your goal (task.md): {goal[:600]}"] if goal else []),
        f"- commits: commit on your branch with subjects like \"[{a}] what changed\"; " + _ATTRIBUTION[me.attribution].format(a=a),
        f"- report: spark-git report {t} --agent {a} --status COMPLETE (reviewers add --decision APPROVED|REJECTED --feedback \"…\")",
        f"- behind the task branch: spark-git sync {t} --agent {a}",
        f"- task {t}: state {me.task_state}, branch {me.task_branch} at {(me.task_head or '?')[:12]}; the coordinator merges, "
        "approves and completes it (those commands refuse an agent)",
    ]
