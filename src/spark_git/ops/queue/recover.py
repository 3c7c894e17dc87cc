"""After a draining process was killed (the caller holds the queue-drain mutex, so it is dead): remove
its scratch worktrees, forget the candidates it was gating, finish recording a batch whose base had
already moved, drop a candidate that had not landed (its entries are still queued and are gated again)."""

from __future__ import annotations

from spark_git.core.git import Git
from spark_git.core.layout import Layout
from spark_git.ops.queue import attestland, gate
from spark_git.ops.queue.checks import base_worktree
from spark_git.ops.queue.land import LANDING_REASON, finish
from spark_git.ops.shared.merging.strays import drop_identical_untracked
from spark_git.state.locks import MAIN
from spark_git.state.store import Store


def recover(layout: Layout, store: Store) -> list[str]:
    done = gate.remove_stale(layout, store) + _landing_lock(store) + _running(store)
    log = store.read_queue_log()
    cand = log.candidate
    if cand is None:
        return done
    git = layout.git()
    head = git.branch_head(cand.base_branch)
    if cand.landing and head and git.is_ancestor(cand.landing, head):
        landed = [p.task for p in cand.parts]
        attestland.record(layout, store, cand)  # landing attests before the base moves: a no-op unless a part was missed
        finish(layout, store, cand, base_worktree(git, cand.base_branch) is not None)
        done.append(f"finished recording the landed batch {', '.join(landed)} of a killed queue drain")
    else:
        log.candidate = None
        store.write_queue_log(log)
        done.append(f"dropped the candidate of a killed queue drain (nothing landed; {', '.join(p.task for p in cand.parts)} stay queued)")
        done += _half_checkout(git, cand.base_branch, cand.landing)
    return done


def _running(store: Store) -> list[str]:
    """The candidates a killed drain was gating in parallel: their gates died with it (core/proc.py's
    watchdog) and remove_stale took their worktrees; their entries are still queued."""
    log = store.read_queue_log()
    if not log.running:
        return []
    gone = [", ".join(p.task for p in c.parts) for c in log.running]
    log.running = []
    store.write_queue_log(log)
    return [f"dropped {len(gone)} running candidate(s) of a killed queue drain ({'; '.join(gone)}: they stay queued)"]


def _half_checkout(git: Git, base: str, landing: str | None) -> list[str]:
    """A `merge --ff-only` killed in the main worktree may have written files of the batch without
    moving the branch or the index: untracked now, they would block the next landing. Each is removed
    only when byte-identical to its blob in the batch's tip (git keeps that content)."""
    main_wt = base_worktree(git, base) if landing else None
    if main_wt is None or landing is None:
        return []
    dropped = drop_identical_untracked(Git(main_wt), [landing])
    return [f"removed {len(dropped)} file(s) a killed landing had half checked out in {main_wt}: {', '.join(dropped[:10])}"] if dropped else []


def _landing_lock(store: Store) -> list[str]:
    """The main-worktree lock a killed drain took to land: only a drain lands, and we hold the drain mutex."""
    with store.mutex(MAIN):
        held = store.read_main_lock()
        if held is None or held.reason != LANDING_REASON:
            return []
        store.release_main_lock()
    return [f"released the main-worktree lock of a killed queue drain (pid {held.pid}, session {held.session_id})"]
