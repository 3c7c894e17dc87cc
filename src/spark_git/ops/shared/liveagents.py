"""Agents running right now outside spark-git's box: a client started by hand in an agent's worktree
(issue 31 item 3). `status` and `hooks check` name each, with the way to run it boxed."""

from __future__ import annotations

from pathlib import Path

from spark_git.clients import registry
from spark_git.core import procs
from spark_git.core.errors import SparkError
from spark_git.state.models import TaskFile
from spark_git.state.store import Store


def unboxed(store: Store) -> list[str]:
    """One line per live, unboxed client process in an agent worktree (several processes of one
    client there count once)."""
    programs = {c.facts.run.headless[0]: c for c in registry.every() if c.facts.run}
    root = store.layout.tasks_root.resolve()
    found = [p for p in procs.running(set(programs)) if not p.boxed and p.cwd.is_relative_to(root)]
    if not found:
        return []
    places = {Path(e.worktree).resolve(): (t, a) for t, tf in _tasks(store) for a, e in tf.agents.items()}
    out: dict[tuple[str, str, str], int] = {}
    for p in found:
        where = next((places[d] for d in (p.cwd, *p.cwd.parents) if d in places), None)
        if where is not None:
            out.setdefault((*where, p.program), p.pid)
    return [f"agent {a} of task {t} runs {programs[prog].facts.title} outside spark-git's box (pid {pid}, started by hand): "
            f"it can read the user's files and write outside its worktree; stop it and use `spark-git agent run {t} {a} --client {programs[prog].name}`"
            for (t, a, prog), pid in sorted(out.items())]


def _tasks(store: Store) -> list[tuple[str, TaskFile]]:
    out = []
    for t in store.task_names():
        try:
            tf = store.read_task(t)
        except SparkError:  # a corrupt task is status's own row to report
            continue
        if tf is not None:
            out.append((t, tf))
    return out
