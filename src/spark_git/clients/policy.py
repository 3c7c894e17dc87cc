"""The client-neutral hook policy: may this tool call go ahead? Who the caller is comes from where it
stands (an agent in its own worktree, or the coordinator anywhere else); what it may touch comes from
the layout and the task state, read as plain JSON. Standard library only (runs before every tool
call). Shell commands are judged in clients/shell.py."""

from __future__ import annotations

import os
from pathlib import Path

from spark_git.clients import shell
from spark_git.clients.calls import ALLOW_UNTOUCHED, EDIT, SHELL, WRITE, Decision, ToolCall
from spark_git.core import paths
from spark_git.core.paths import Place, Repo, real, repo_around

SESSION_ENV = "SPARK_SESSION_ID"
# Documentation the coordinator may edit in the task worktree during IMPLEMENTATION; everything
# else there counts as source (code, tests, config, build files).
DOC_SUFFIXES = (".md", ".markdown", ".rst", ".txt", ".adoc")
DOC_DIRS = ("docs", "doc")


def decide(call: ToolCall) -> Decision:
    repo = repo_around(Path(call.cwd))
    if call.kind in (WRITE, EDIT):
        if not call.paths:
            return Decision(True, f"spark-git: allowed: {call.tool} names no path") if repo else ALLOW_UNTOUCHED
        decisions = [_write(repo, call, target) for target in call.paths]
        return next((d for d in decisions if not d.allow), decisions[0])
    if repo is None or not active(repo):
        return ALLOW_UNTOUCHED
    if call.kind == SHELL:
        if call.command is None:
            return Decision(True, "spark-git: allowed: no command")
        return shell.decide_shell(repo, Path(call.cwd), call.command)
    return Decision(True, f"spark-git: allowed: {call.tool} is not checked")


def _write(repo: Repo | None, call: ToolCall, target: str) -> Decision:
    if repo is None:  # standing outside, writing in? judge by where the write lands
        t = Path(os.path.expanduser(target))
        repo = repo_around((t if t.is_absolute() else Path(call.cwd) / t).parent)
    if repo is None or not active(repo):
        return ALLOW_UNTOUCHED
    return decide_write(repo, Path(call.cwd), target, sessions(call))


def active(repo: Repo) -> bool:
    """Some task lock (or the main lock) exists. A repo whose tasks all ended is left alone like one
    that never used spark-git (its main worktree needs no main lock then)."""
    try:
        return any(os.path.isfile(os.path.join(e.path, paths.TASK_JSON)) for e in os.scandir(repo.tasks_root) if e.is_dir())
    except OSError:
        return False


def sessions(call: ToolCall) -> set[str]:
    return {s for s in (call.session_id, os.environ.get(SESSION_ENV)) if isinstance(s, str) and s}


def caller(repo: Repo, cwd: Path) -> Place:
    """Who is asking: kind "agent" (with task and agent) when standing in an agent worktree; any
    other place means the coordinator."""
    return repo.locate(real(cwd))


def task_state(repo: Repo, task: str) -> str | None:
    tf = paths.read_json(paths.task_json(repo.tasks_root, task))
    return tf.get("state") if tf else None


def holds_main_lock(repo: Repo, sessions: set[str]) -> bool:
    lock = paths.read_json(paths.main_lock(repo.tasks_root))
    return lock is not None and lock.get("session_id") in sessions


def is_source(rel: tuple[str, ...]) -> bool:
    if not rel:
        return True
    if rel[0] in DOC_DIRS:
        return False
    return not rel[-1].lower().endswith(DOC_SUFFIXES)


def decide_write(repo: Repo, cwd: Path, target: str, sessions: set[str]) -> Decision:
    path = Path(os.path.expanduser(target))
    resolved = real(path if path.is_absolute() else cwd / path)  # symlinks and `..` resolved
    me = caller(repo, cwd)
    there = repo.locate(resolved)
    shown = f"{target} (→ {resolved})" if str(resolved) != target else target
    if me.kind == "agent" and me.task and me.agent:
        return _agent_write(repo, me.task, me.agent, there, resolved, shown)
    return _coordinator_write(repo, there, shown, sessions)


def _agent_write(repo: Repo, task: str, agent: str, there: Place, resolved: Path, shown: str) -> Decision:
    own = f"{paths.agent_dir(repo.tasks_root, task, agent)}"
    if there.kind == "agent" and (there.task, there.agent) == (task, agent):
        return Decision(True, f"spark-git: allowed: agent {agent} writes in its own worktree")
    if there.kind == "taskdir" and there.task == task and (
        there.rel[:2] == (paths.AGENTS, agent) or there.rel == (paths.requirements_name(task, agent),)
    ):
        return Decision(True, f"spark-git: allowed: agent {agent} writes its own report")
    if there.kind != "outside" or resolved.is_relative_to(repo.common):
        return Decision(
            False,
            f"spark-git: blocked: agent {agent} of task {task} may write only in its own worktree "
            f"and its reports under {own}; {shown} is {describe(there)}",
        )
    return Decision(True, "spark-git: allowed: outside the repository")


def _coordinator_write(repo: Repo, there: Place, shown: str, sessions: set[str]) -> Decision:
    # The coordinator: anyone not standing in an agent worktree.
    if there.kind == "agent":
        return Decision(
            False,
            f"spark-git: blocked: {shown} is in agent {there.agent}'s worktree of task {there.task}; "
            f"only that agent writes there — delegate the change to it (its work lands with `spark-git merge {there.task} --agent {there.agent}`)",
        )
    if there.kind == "task" and there.task and task_state(repo, there.task) == "IMPLEMENTATION" and is_source(there.rel):
        return Decision(
            False,
            f"spark-git: blocked: task {there.task} is in IMPLEMENTATION: source changes in the task worktree come from agents "
            f"and land with `spark-git merge {there.task} --agent A` (the coordinator may edit docs and *.md; {shown} is source)",
        )
    if there.kind == "main" and not holds_main_lock(repo, sessions):
        return Decision(
            False,
            f"spark-git: blocked: {shown} is in the main worktree and this session does not hold the main lock; "
            "work in a task (`spark-git start`) or take it with `spark-git lock main`",
        )
    return Decision(True, f"spark-git: allowed: {describe(there)}")


def describe(pl: Place) -> str:
    return {
        "agent": f"in agent {pl.agent}'s worktree of task {pl.task}",
        "task": f"in the task worktree of {pl.task}",
        "taskdir": f"in the task directory of {pl.task}",
        "root": "the tasks root",
        "main": "in the main worktree",
        "outside": "outside the repository",
    }[pl.kind]
