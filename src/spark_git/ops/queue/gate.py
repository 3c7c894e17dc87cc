"""The final gate on a candidate, once, in a scratch worktree (`worktree add --detach` under the
tasks root, removed afterwards): the candidate is a commit no worktree has checked out."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from spark_git.core import faults
from spark_git.core.errors import GitError
from spark_git.core.git import Git
from spark_git.core.layout import Layout
from spark_git.core.proc import Ticker
from spark_git.gates import command as gates
from spark_git.gates import verdicts
from spark_git.ops.shared import envs, gatetree
from spark_git.state.locks import WORKTREES
from spark_git.state.store import Store

SCRATCH_PREFIX = "scratch-"


@dataclass(frozen=True)
class GateOpts:
    rerun: bool = False  # run even if the candidate's tree already passed (a recorded verdict)
    ticker: Ticker | None = None  # elapsed time and last output line on a terminal


def queue_dir(layout: Layout) -> Path:
    return layout.tasks_root / ".queue"


def run_in_task(layout: Layout, store: Store, tip: str, task: str, worktree: Path, opts: GateOpts) -> gates.GateEvidence | None:
    """A batch of one that fast-forwards: its candidate is the task head, so a passing verdict of the
    task's tree is reused, or the gate runs in the task's clean gate checkout of it (ops/shared/gatetree.py,
    no scratch worktree to add). None if the task worktree is not at the head (then the scratch worktree is used)."""
    if Git(worktree).head() != tip:
        return None
    ev = verdicts.run_configured(store, "final", layout.config.gates, worktree, layout.logs_dir(task),
                                 env=envs.for_worktree(store, task), rerun=opts.rerun, ticker=opts.ticker,
                                 place=lambda commit: gatetree.clean_checkout(store, f"{task}/final", commit, task))
    _count(store, ev)
    ran_in = Git(ev.worktree) if ev.ran else Git(worktree)
    left = ran_in.status()
    if ev.passed and (left or ran_in.head() != tip):  # what passed must be the commit that lands, nothing else
        ev = ev.model_copy(update={"passed": False, "error": f"the final gate changed {ran_in.cwd}: {', '.join(str(e) for e in left[:10])}"})
    return ev


def _count(store: Store, ev: gates.GateEvidence) -> None:
    if ev.reused_from or not ev.ran:
        return  # a verdict reused for this tree, or no gate configured: nothing ran
    log = store.read_queue_log()
    log.gate_runs += 1
    log.counts.gate_runs += 1
    store.write_queue_log(log)


def run(layout: Layout, store: Store, tip: str, tasks: list[str], opts: GateOpts, name: str | None = None, *,
        count: bool = True) -> gates.GateEvidence:
    """Runs gates.final on `tip` (env of the batch's last task, SPARK_QUEUE_BATCH = the tasks). The log
    goes to the last task's logs: a batch of one logs where `complete` always did, and a bisection's
    failing run ends with the culprit. `name`: the scratch worktree's (one per running candidate);
    `count`: False when the caller counts the run (a gate in another thread must not write the log)."""
    git = layout.git()
    path = scratch_path(layout, name)
    with store.mutex(WORKTREES):
        _remove(git, path)
        git.run("worktree", "add", "--quiet", "--detach", str(path), tip)
    try:
        env = {**envs.for_worktree(store, tasks[-1]), "SPARK_WORKTREE": str(path), "SPARK_QUEUE_BATCH": ",".join(tasks)}
        faults.point("queue-gate-start")
        ev = verdicts.run_configured(store, "final", layout.config.gates, path, layout.logs_dir(tasks[-1]), env=env,
                                     rerun=opts.rerun, ticker=opts.ticker)
    finally:
        with store.mutex(WORKTREES):
            _remove(git, path)
    if count:
        _count(store, ev)
    return ev


def scratch_path(layout: Layout, name: str | None = None) -> Path:
    return queue_dir(layout) / (name or f"{SCRATCH_PREFIX}{os.getpid()}")


def scratch_name(n: int) -> str:
    """The scratch worktree of this process's n-th candidate."""
    return f"{SCRATCH_PREFIX}{os.getpid()}-{n}"


def count(store: Store, ev: gates.GateEvidence) -> None:
    _count(store, ev)


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
    if not path.exists():
        return
    try:
        git.run("worktree", "remove", "--force", str(path))
    except GitError:  # half-created by a killed drain: not registered, or registered without its files
        shutil.rmtree(path, ignore_errors=True)
        git.worktree_prune()
