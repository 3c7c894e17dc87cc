"""Agents running right now outside spark-git's box: a client started by hand in an agent's worktree
(issue 31 item 3). `status` and `hooks check` name each, with the way to run it boxed."""

from __future__ import annotations

from pathlib import Path

from spark_git.clients import registry
from spark_git.core import procs
from spark_git.state.store import Store


def unboxed(store: Store) -> list[str]:
    """One line per live, unboxed client process in an agent worktree (several processes of one
    client there count once)."""
    programs = {c.facts.run.headless[0]: c for c in registry.every() if c.facts.run}
    found = [p for p in procs.running(set(programs)) if not p.boxed]
    if not found:
        return []
    places = {Path(e.worktree).resolve(): (t, a) for t in store.task_names() for tf in [store.read_task(t)] if tf
              for a, e in tf.agents.items()}
    out: dict[tuple[str, str, str], int] = {}
    for p in found:
        where = next((places[d] for d in (p.cwd, *p.cwd.parents) if d in places), None)
        if where is not None:
            out.setdefault((*where, p.program), p.pid)
    return [f"agent {a} of task {t} runs {programs[prog].facts.title} outside spark-git's box (pid {pid}, started by hand): "
            f"it can read the user's files and write outside its worktree; stop it and use `spark-git agent run {t} {a} --client {programs[prog].name}`"
            for (t, a, prog), pid in sorted(out.items())]
