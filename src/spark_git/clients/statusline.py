"""`spark-git statusline`: one short line for Claude Code's `statusLine` setting (run after every
assistant message, its event on stdin: `cwd`, `workspace.current_dir`, `workspace.project_dir`,
`session_id`): task, agent, state, queue position, dirty and commits ahead. The fast path from
__main__: standard library only (like clients/hooks.py), task state read as plain JSON, the two git
questions asked side by side."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from spark_git.core import gitlite, paths
from spark_git.core.paths import Repo, real, repo_around
from spark_git.guard import identity

QUEUE_PREFIX = "refs/spark/queue/"  # as state/queuelog.py names the queue's refs


def main(argv: list[str]) -> int:
    """Prints the line (nothing outside a spark-git repo); -1 for anything but a bare `statusline`
    (--help, --json: the typer app answers)."""
    if argv != ["statusline"]:
        return -1
    try:
        event = json.loads(sys.stdin.read() or "{}")
    except ValueError:
        event = {}
    info = compute(event if isinstance(event, dict) else {})
    if info.get("line"):
        sys.stdout.write(f"{info['line']}\n")
    return 0


def compute(event: dict[str, object], default_dir: str | None = None) -> dict[str, object]:
    """The fields of the line (`line` is the line itself): task, agent, state, queue, dirty, ahead.
    Where: the event's workspace.current_dir or cwd, else `default_dir`, else the process's cwd."""
    ws = event.get("workspace") if isinstance(event.get("workspace"), dict) else {}
    assert isinstance(ws, dict)
    here = next((str(v) for v in (ws.get("current_dir"), event.get("cwd")) if isinstance(v, str) and v), default_dir or os.getcwd())
    repo = repo_around(Path(here))
    if repo is None:
        return {"line": ""}
    sid = event.get("session_id")
    session = sid if isinstance(sid, str) else None
    launch = ws.get("project_dir")
    who = identity.caller(repo, session, launch if isinstance(launch, str) else here)  # an agent stays that agent wherever it stands
    place = who if who.kind == "agent" else repo.locate(real(here))
    if place.task is None or place.kind not in ("agent", "task", "taskdir"):
        n = _live_tasks(repo)
        return {"line": f"spark-git: {n} live task{'s' if n != 1 else ''}" if n else "", "live_tasks": n}
    return _task_line(repo, place.task, place.agent)


def _task_line(repo: Repo, task: str, agent: str | None) -> dict[str, object]:
    tf = paths.read_json(paths.task_json(repo.tasks_root, task))
    label = f"{task}/{agent}" if agent else task
    if tf is None:
        return {"task": task, "agent": agent, "line": f"spark-git {label}: ended or not started"}
    state = str(tf.get("state", "?"))
    queue = _queue_position(repo.common, task)
    info: dict[str, object] = {"task": task, "agent": agent, "state": state, "queue": queue, "dirty": None, "ahead": None, "behind": None}
    wt = paths.agent_worktree(repo.tasks_root, task, agent) if agent else paths.task_worktree(repo.tasks_root, task)
    entry = tf.get("agents", {}).get(agent) if agent and isinstance(tf.get("agents"), dict) else None
    branch = entry.get("branch") if isinstance(entry, dict) else (None if agent else tf.get("task_branch"))
    upstream = tf.get("task_branch") if agent else tf.get("base_branch")
    if wt.is_dir() and isinstance(branch, str) and isinstance(upstream, str):
        info.update(_worktree(str(wt), branch, upstream))
    parts = [label, state]
    if queue:
        parts.append(f"queue #{queue}")
    if info["dirty"] is not None:
        parts.append("dirty" if info["dirty"] else "clean")
    ahead, behind = info["ahead"], info["behind"]
    if ahead and behind:
        parts.append(f"{ahead} ahead, {behind} behind {upstream}")
    elif ahead or behind:
        parts.append(f"{ahead} ahead of {upstream}" if ahead else f"{behind} behind {upstream}")
    info["line"] = "spark-git " + " · ".join(parts)
    return info


def _worktree(wt: str, branch: str, upstream: str) -> dict[str, object]:
    """Dirty, and commits ahead of / behind `upstream`, from one `git status`: the upstream is given for
    this run only (`-c branch.<b>.merge`, remote "."), so git counts them itself and nothing is written."""
    rc, out = gitlite.run_all(wt, [[
        "-c", f"branch.{branch}.remote=.", "-c", f"branch.{branch}.merge=refs/heads/{upstream}",
        "status", "--porcelain=v2", "--branch", "-z", "--no-renames",
    ]])[0]
    if rc != 0:
        return {}
    fields = out.split("\0")
    ab = next((f.split()[2:4] for f in fields if f.startswith("# branch.ab ")), None)
    res: dict[str, object] = {"dirty": any(f and not f.startswith("# ") for f in fields)}
    if ab:
        res["ahead"], res["behind"] = int(ab[0].lstrip("+")), int(ab[1].lstrip("-"))
    return res


def _queue_position(common: Path, task: str) -> int | None:
    """1-based place of `task` in the landing queue, from the refs' names (loose and packed; no git)."""
    names: set[str] = set()
    try:
        names.update(e.name for e in os.scandir(common / QUEUE_PREFIX) if e.is_file())
    except OSError:
        pass
    try:
        with open(common / "packed-refs") as f:
            names.update(ln.split(" ", 1)[1].strip()[len(QUEUE_PREFIX):] for ln in f if f" {QUEUE_PREFIX}" in ln)
    except (OSError, IndexError):
        pass
    order = sorted(n for n in names if n)
    tasks = [n.partition("-")[2] for n in order]
    return tasks.index(task) + 1 if task in tasks else None


def _live_tasks(repo: Repo) -> int:
    try:
        return sum(1 for e in os.scandir(repo.tasks_root) if e.is_dir() and paths.is_task_dir_name(e.name) and os.path.isfile(os.path.join(e.path, paths.TASK_JSON)))
    except OSError:
        return 0
