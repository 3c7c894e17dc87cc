"""`spark-git hook session-start`: after a restart or a context compaction, tell the session which
tasks it owns, where each stands, what it waits for and what to run next."""

from __future__ import annotations

import shlex
from pathlib import Path

from spark_git.core.errors import CorruptState
from spark_git.core.layout import Layout
from spark_git.core.model import Model
from spark_git.state.backends import open_store
from spark_git.state.models import TaskFile


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


class SessionStartData(Model):
    sessions: list[str]
    tasks: list[TaskCheckpoint]
    problems: list[str] = []


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


def collect(layout: Layout, sessions: set[str]) -> SessionStartData:
    store = open_store(layout)
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


def from_event(event_cwd: str | None) -> Path:
    return Path(event_cwd) if event_cwd else Path.cwd()


def remember_launch(session: object, cwd: Path) -> None:
    """Records the directory a client session started in (identity.remember), when it starts inside
    a spark-git repo; the hook then judges the session by it wherever it `cd`s."""
    from spark_git.clients import identity
    from spark_git.core.paths import repo_around

    repo = repo_around(cwd) if isinstance(session, str) and session else None
    if repo is not None and isinstance(session, str):
        try:
            identity.remember(repo.common, session, cwd)
        except OSError:
            pass  # a read-only .git: the hook falls back to CLAUDE_PROJECT_DIR and cwd
