"""The final gate on a candidate, once, in a scratch worktree (`worktree add --detach` under the
tasks root, removed afterwards): the candidate is a commit no worktree has checked out."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from spark_git.core import faults
from spark_git.core.git import Git
from spark_git.core.layout import Layout
from spark_git.gates import command as gates
from spark_git.ops import envs
from spark_git.state.locks import WORKTREES
from spark_git.state.store import Store

SCRATCH_PREFIX = "scratch-"


def queue_dir(layout: Layout) -> Path:
    return layout.tasks_root / ".queue"


def run(layout: Layout, store: Store, tip: str, tasks: list[str]) -> gates.GateEvidence:
    """Runs gates.final on `tip` (env of the batch's last task, SPARK_QUEUE_BATCH = the tasks)."""
    cfg, git = layout.config.gates, layout.git()
    path = queue_dir(layout) / f"{SCRATCH_PREFIX}{os.getpid()}"
    with store.mutex(WORKTREES):
        _remove(git, path)
        git.run("worktree", "add", "--quiet", "--detach", str(path), tip)
    try:
        env = {**envs.for_worktree(store, tasks[-1]), "SPARK_WORKTREE": str(path), "SPARK_QUEUE_BATCH": ",".join(tasks)}
        faults.point("queue-gate-start")
        ev = gates.run("final", cfg.final, path, queue_dir(layout) / "logs", cfg.timeout_s, env=env)
    finally:
        with store.mutex(WORKTREES):
            _remove(git, path)
    log = store.read_queue_log()
    log.gate_runs += 1
    store.write_queue_log(log)
    return ev


def stale_scratch(layout: Layout) -> list[Path]:
    """Scratch worktrees left by a killed drain (call with the queue-drain mutex held: no live owner)."""
    d = queue_dir(layout)
    return sorted(p for p in d.glob(f"{SCRATCH_PREFIX}*") if p.is_dir()) if d.is_dir() else []


def remove_stale(layout: Layout, store: Store) -> list[str]:
    done = []
    with store.mutex(WORKTREES):
        for p in stale_scratch(layout):
            _remove(layout.git(), p)
            done.append(f"removed the scratch worktree {p} of a killed queue drain")
    return done


def _remove(git: Git, path: Path) -> None:
    if any(wt.path == path for wt in git.worktrees()):
        git.worktree_remove(path, force=True)
    if path.exists():
        shutil.rmtree(path)
    git.worktree_prune()
