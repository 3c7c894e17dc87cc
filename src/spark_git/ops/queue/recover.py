"""After a draining process was killed (the caller holds the queue-drain mutex, so it is dead): remove
its scratch worktree, finish recording a batch whose base had already moved, drop a candidate that
had not landed (its entries are still queued and are gated again)."""

from __future__ import annotations

from spark_git.core.layout import Layout
from spark_git.ops.queue import gate
from spark_git.ops.queue.checks import base_worktree
from spark_git.ops.queue.land import LANDING_REASON, finish
from spark_git.state.locks import MAIN
from spark_git.state.store import Store


def recover(layout: Layout, store: Store) -> list[str]:
    done = gate.remove_stale(layout, store) + _landing_lock(store)
    log = store.read_queue_log()
    cand = log.candidate
    if cand is None:
        return done
    git = layout.git()
    head = git.branch_head(cand.base_branch)
    if cand.landing and head and git.is_ancestor(cand.landing, head):
        landed = [p.task for p in cand.parts]
        finish(layout, store, cand, base_worktree(git, cand.base_branch) is not None)
        done.append(f"finished recording the landed batch {', '.join(landed)} of a killed queue drain")
    else:
        log.candidate = None
        store.write_queue_log(log)
        done.append(f"dropped the candidate of a killed queue drain (nothing landed; {', '.join(p.task for p in cand.parts)} stay queued)")
    return done


def _landing_lock(store: Store) -> list[str]:
    """The main-worktree lock a killed drain took to land: only a drain lands, and we hold the drain mutex."""
    with store.mutex(MAIN):
        held = store.read_main_lock()
        if held is None or held.reason != LANDING_REASON:
            return []
        store.release_main_lock()
    return [f"released the main-worktree lock of a killed queue drain (pid {held.pid}, session {held.session_id})"]
