"""`spark-git queue` (entries, the running candidate, recent outcomes) and `spark-git queue run`
(drain without enqueueing: for a CI job or a cron)."""

from __future__ import annotations

from spark_git.core.layout import Layout
from spark_git.core.model import Model
from spark_git.ops.queue.drain import DRAIN, drain_locked
from spark_git.ops.queue.forge import ForgeView, refresh_all
from spark_git.ops.queue.gate import GateOpts
from spark_git.state.backends import open_store
from spark_git.state.queuelog import FlakyGate, QueueCandidate, QueueOutcome
from spark_git.state.queuerefs import Priority, seq_priority
from spark_git.state.store import Store

RECENT = 10


class QueueItem(Model):
    ref: str
    task: str
    head: str
    state: str | None = None  # the task's protocol state (it keeps it while queued)
    priority: Priority = "normal"  # high: `complete --priority high`, ahead of every normal entry


class QueueData(Model):
    entries: list[QueueItem]
    candidate: QueueCandidate | None = None  # the batch being gated or landed right now
    running: list[QueueCandidate] = []  # the candidates gating now, each in its scratch worktree (`[queue] parallel`)
    parallel: int = 1  # the runners: candidates gated at once
    draining: bool  # another process holds the queue-drain mutex
    recent: list[QueueOutcome]
    gate_runs: int
    batch_max: int
    forge: list[ForgeView] = []  # tasks landing through the forge (`complete --via`): as the forge answered just now
    flaky: list[FlakyGate] = []  # recent final gates that failed, then passed on a retry (`[queue] retries`)
    retries: int = 0


class QueueRunData(Model):
    drained: bool  # False: another process was draining already
    outcomes: list[QueueOutcome]  # what this run decided
    repaired: list[str] = []  # what a killed drain had left, repaired first
    remaining: list[QueueItem]


def show(layout: Layout) -> QueueData:
    store = open_store(layout)
    forge = refresh_all(layout, store)  # first: a merge seen now is among the outcomes below
    with store.try_mutex(DRAIN) as free:
        log = store.read_queue_log()
    return QueueData(entries=_items(store), candidate=log.candidate, running=log.running, parallel=layout.config.queue.runners(),
                     draining=not free, recent=log.outcomes[-RECENT:],
                     gate_runs=log.gate_runs, batch_max=layout.config.queue.batch_max, forge=forge, flaky=log.flaky[-RECENT:],
                     retries=layout.config.queue.retries)


def run(layout: Layout, session: str | None, rerun: bool = False) -> QueueRunData:
    store = open_store(layout)
    before = len(store.read_queue_log().outcomes)
    with store.try_mutex(DRAIN) as got:
        repaired = drain_locked(layout, store, session, GateOpts(rerun=rerun)) if got else []
    outcomes = store.read_queue_log().outcomes
    return QueueRunData(drained=got, outcomes=outcomes[before:] if got and before <= len(outcomes) else [], repaired=repaired,
                        remaining=_items(store))


def _items(store: Store) -> list[QueueItem]:
    res = []
    for e in store.queue_entries():
        tf = store.read_task(e.task)
        res.append(QueueItem(ref=e.ref, task=e.task, head=e.sha, state=tf.state if tf else None, priority=seq_priority(e.seq)))
    return res
