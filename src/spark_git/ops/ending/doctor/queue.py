"""Doctor's merge-queue check: what a killed drain leaves (its scratch worktree, its candidate record,
its main-worktree lock for the landing) and queue refs whose task is gone. `--fix` runs the queue's
own recovery (finish a batch whose base had moved, drop one that had not; queued entries stay queued
and land on the next `complete` or `queue run`)."""

from __future__ import annotations

from functools import partial

from spark_git.core.errors import Blocked
from spark_git.ops.ending.doctor.scan import Ctx, Finding
from spark_git.ops.queue import gate
from spark_git.ops.queue.drain import DRAIN
from spark_git.ops.queue.land import LANDING_REASON, evict
from spark_git.ops.queue.recover import recover
from spark_git.state.queuerefs import QueueEntry


def check_queue(ctx: Ctx) -> None:
    if not gate.queue_dir(ctx.layout).is_dir():
        return  # the queue was never used here: no git process, no mutex file
    store = ctx.store
    with store.try_mutex(DRAIN) as free:
        if not free:
            return  # a live drain: whatever it has out is in use
        problems = _leftovers(ctx)
        orphans = [e for e in store.queue_entries() if not store.has_task(e.task)]
    if problems:
        ctx.add(Finding(where="queue", kind="queue-drain-killed", problem="a killed queue drain left " + "; ".join(problems),
                        repair="--fix: finish or drop its batch (queued tasks stay queued), remove its scratch worktree; then `spark-git queue run`"),
                lambda: _recover(ctx))
    for e in orphans:
        ctx.add(Finding(where="queue", kind="queue-ref-orphan", problem=f"{e.ref} queues task {e.task}, which no longer exists",
                        repair=f"--fix: remove {e.ref} (compare-and-swap) with a blocked outcome"),
                partial(_drop, ctx, e))


def _drop(ctx: Ctx, e: QueueEntry) -> None:
    evict(ctx.layout, ctx.store, e, "blocked", "the task no longer exists")


def _leftovers(ctx: Ctx) -> list[str]:
    store = ctx.store
    found = [f"the scratch worktree {p}" for p in gate.stale_scratch(ctx.layout)]
    log = store.read_queue_log()
    found += [f"the running candidate of {', '.join(p.task for p in c.parts)} (pid {c.pid}, {c.scratch})" for c in log.running]
    cand = log.candidate
    if cand is not None:
        found.append(f"the candidate of {', '.join(p.task for p in cand.parts)} on {cand.base_branch} (pid {cand.pid})"
                     + (" with its landing started" if cand.landing else ""))
    held = store.read_main_lock()
    if held is not None and held.reason == LANDING_REASON:
        found.append(f"its main-worktree lock (pid {held.pid})")
    return found


def _recover(ctx: Ctx) -> None:
    store = ctx.store
    with store.try_mutex(DRAIN) as free:
        if not free:
            raise Blocked("a queue drain started meanwhile; run doctor again when it is done")
        recover(ctx.layout, store)
