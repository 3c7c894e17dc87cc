"""Draining the queue, one process at a time (the "queue-drain" mutex): batches of ready entries are
built, gated once, landed or bisected, until the queue is empty. `wait_for` is what a `complete`
does after enqueueing: drain if nobody does, else wait for its own outcome."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from spark_git.core import faults
from spark_git.core.errors import Blocked
from spark_git.core.git import Sha
from spark_git.core.layout import Layout
from spark_git.gates import command as gates
from spark_git.gates import evidence
from spark_git.ops.queue import candidate, gate, lanedrive, lanes, pipeline, probes, retry, stack
from spark_git.ops.queue.checks import approval_unmet, base_worktree, in_the_way
from spark_git.ops.queue.land import BaseMoved, evict, land, nothing_to_land, problem
from spark_git.ops.queue.recover import recover
from spark_git.ops.queue.retry import gate_with_retries
from spark_git.ops.queue.selection import run_length
from spark_git.ops.queue.speculate import prefix
from spark_git.state.queuelog import CandidatePart, QueueCandidate, QueueOutcome
from spark_git.state.queuerefs import QueueEntry
from spark_git.state.store import Store

DRAIN = "queue-drain"
MAX_REBUILDS = 5  # the base moved under this many batches in a row: give up for now, entries stay queued


def wait_for(layout: Layout, store: Store, entry: QueueEntry, session: str, notify: Callable[[str], None] | None,
             opts: gate.GateOpts | None = None) -> QueueOutcome:
    """The entry's outcome: drains the queue when no other process does, else polls for it (bounded)."""
    cfg = layout.config.queue
    deadline, told = time.monotonic() + cfg.wait_s, False
    while True:
        with store.try_mutex(DRAIN) as got:
            if got:
                drain_locked(layout, store, session, opts)
        o = store.read_queue_log().outcome_for(entry.ref)
        if o is not None:
            return o
        if got or time.monotonic() > deadline:
            raise Blocked(f"{entry.task} is still in the merge queue ({entry.ref})", task=entry.task,
                          hint="the base kept moving or the wait timed out; the entry stays queued",
                          next=["spark-git queue", "spark-git queue run"])
        if notify is not None and not told:
            notify(f"queued {entry.task} as {entry.ref}; another process is draining the queue, waiting for the outcome")
            told = True
        time.sleep(cfg.poll_s)  # another process drains; its outcome record is what we wait for


def drain_locked(layout: Layout, store: Store, session: str | None, opts: gate.GateOpts | None = None) -> list[str]:
    """Drains until the queue is empty (or the base keeps moving). Caller holds the DRAIN mutex.
    Returns what recovery had to repair first."""
    repaired = recover(layout, store)
    rebuilds = 0
    while True:
        ready = _ready(layout, store)
        if not ready:
            return repaired
        who, how = session or f"queue-drain-{os.getpid()}", opts or gate.GateOpts()
        try:
            if _pipelined(layout):
                _pipeline(layout, store, ready, who, how)
            else:
                _batch(layout, store, _run(layout, store, ready), who, how)
            rebuilds = 0
        except BaseMoved:
            rebuilds += 1  # nothing landed on the stale base; rebuild on the new one
            if rebuilds >= MAX_REBUILDS:
                return repaired


def way_on(layout: Layout, store: Store, task: str) -> list[str]:
    """The command for a task the queue gave back before gating it: the approval again when it no
    longer holds for the head (the branch moved), else `complete` once what blocked it is fixed."""
    tf = store.read_task(task)
    head = layout.git().branch_head(tf.task_branch) if tf is not None else None
    if tf is None or head is None:
        return [f"spark-git status {task}"]
    fixes = [u.fix for u in approval_unmet(layout, tf, head) if u.fix]
    return fixes[:1] or [f"spark-git complete {task}"]


def _ready(layout: Layout, store: Store, entries: list[QueueEntry] | None = None) -> list[QueueEntry]:
    """Entries (default: the queue's) that may land, in queue order; the others leave the queue with a blocked outcome."""
    ready = []
    for e in store.queue_entries() if entries is None else entries:
        why = problem(layout, store, e)
        if why is None:
            ready.append(e)
        else:
            evict(layout, store, e, "blocked", why, next=way_on(layout, store, e.task))
    return ready


def _run(layout: Layout, store: Store, ready: list[QueueEntry]) -> list[QueueEntry]:
    """The next batch (selection.run_length: the longest run with the first one's base, at most queue.batch_max)."""
    most = layout.config.queue.batch_max
    return ready[: run_length([_base_of(store, e) for e in ready[:most]], most)]


def _base_of(store: Store, e: QueueEntry) -> str | None:
    tf = store.read_task(e.task)
    return tf.base_branch if tf else None


def _batch(layout: Layout, store: Store, batch: list[QueueEntry], session: str, opts: gate.GateOpts) -> None:
    git, base = layout.git(), _base_of(store, batch[0]) or ""
    store.sync_base(base)  # remote mode: another machine may have landed since
    old = git.branch_head(base)
    if old is None:
        for e in batch:
            evict(layout, store, e, "blocked", f"the base branch {base} does not exist")
        return
    built = candidate.build(git, old, batch)
    _give_back_unbuilt(layout, store, built, base, old)
    if not built.parts:
        return
    cand = QueueCandidate(base_branch=base, old_base=old, parts=built.parts, pid=os.getpid(), session_id=session)
    _save_candidate(store, cand)
    faults.point("queue-after-candidate")
    _gate_and_land(layout, store, cand, {e.task: e for e in batch}, session, opts)


def _give_back_unbuilt(layout: Layout, store: Store, built: candidate.Built, base: str, old: str) -> None:
    """The entries the candidate left out: a conflict, a head in the base already, a patch that would change."""
    for e, files in built.conflicts:
        evict(layout, store, e, "blocked", f"conflicts with {base} and the tasks ahead of it in the queue: {', '.join(files)}", files=files,
              next=[f"spark-git update {e.task}"])
    for e in built.inside:
        tf = store.read_task(e.task)
        if tf is not None and tf.base_commit == e.sha:  # no commit of its own (a task done without a change): it ends, nothing lands
            nothing_to_land(layout, store, e, base, old)
            continue
        evict(layout, store, e, "blocked", f"its head {e.sha[:12]} is in {base} already (landed outside spark-git): there is nothing to land",
              next=[f"spark-git abandon {e.task} --why 'landed outside spark-git'"])
    for e in built.changed:
        evict(layout, store, e, "blocked", f"{base} moved and the approved patch would change on it (the diff's context differs): "
              "the human sees the task again after an update", next=[f"spark-git update {e.task}"])


def _gate_and_land(layout: Layout, store: Store, cand: QueueCandidate, entries: dict[str, QueueEntry], session: str,
                   opts: gate.GateOpts) -> None:
    """A batch of one is gated as `complete` always did (in the task worktree when it fast-forwards) and
    keeps its state when it fails; a longer one goes to the planner ([queue] parallel runners): the
    culprit goes back to IMPLEMENTATION, the probe the planner lands is landed, the rest stays queued."""
    tasks = [p.task for p in cand.parts]
    if len(cand.parts) == 1:
        ev = retry.confirmed(store, _gate_candidate(layout, store, cand, opts), tasks, cand.parts[0].tip,
                             lambda rerun: _gate_once(layout, store, cand, replace(opts, rerun=rerun)))
        if ev.passed:
            _land(layout, store, cand, ev, session)
            return
        _fail(layout, store, entries[tasks[0]], ev, tasks, back=False)
        _save_candidate(store, None)
        return
    if _in_lanes(layout, store, cand, session, opts):
        return
    g = probes.gate_batch(layout, store, cand, opts)
    for c in g.outcome.culprits:
        _fail(layout, store, entries[tasks[c]], g.evs[prefix(c + 1)], tasks, back=True)
    if g.outcome.land:
        _land(layout, store, g.cands[g.outcome.land], g.evs[g.outcome.land], session)
    _save_candidate(store, None)  # the rest stay queued for the next batch


def _in_lanes(layout: Layout, store: Store, cand: QueueCandidate, session: str, opts: gate.GateOpts) -> bool:
    """`[queue] lanes` with more than one runner, once recent batches fail often (`lanes_from`): the
    batch gated as independent lanes, each landed as soon as it is decided (lanedrive.py). False
    when it is not split, or is one lane (then as one batch)."""
    cfg = layout.config.queue
    if cfg.runners() == 1 or not _laned(layout, store):
        return False
    split = [probes.rebuild(layout, cand.model_copy(update={"parts": [cand.parts[i] for i in g]}), cand.old_base)
             for g in lanedrive.groups(layout, cand)]
    cands = [c for c in split if c is not None]
    if len(cands) < 2 or len(cands) != len(split):
        return False
    lanedrive.gate_lanes(layout, store, cands, opts, *_lane_ends(layout, store, session))
    _save_candidate(store, None)
    return True


def _settled(store: Store) -> list[bool]:
    """The recent tasks the queue landed or failed, in order: True for a culprit (failed)."""
    return [o.result == "failed" for o in store.read_queue_log().outcomes if o.result != "blocked"]


def _laned(layout: Layout, store: Store) -> bool:
    """`[queue] lanes`, and recent batches fail often enough for them (`lanes_from`)."""
    cfg = layout.config.queue
    return cfg.lanes and lanes.worth_splitting(_settled(store), cfg.lanes_from)


def _lane_ends(layout: Layout, store: Store, session: str) -> tuple[lanedrive.Fail, lanedrive.Land]:
    """How a lane's culprit leaves the queue, and how a lane lands (False: the base moved under it or
    a task may no longer land; they stay queued)."""
    def fail(part: CandidatePart, ev: gates.GateEvidence, tasks: list[str]) -> None:
        _fail(layout, store, QueueEntry(part.ref, "", part.task, part.head), ev, tasks, back=True)

    def land(c: QueueCandidate, ev: gates.GateEvidence) -> bool:
        try:
            _land(layout, store, c, ev, session)
        except BaseMoved:
            return False
        return True

    return fail, land


def _pipelined(layout: Layout) -> bool:
    cfg = layout.config.queue
    return cfg.pipeline and cfg.runners() > 1


def _pipeline(layout: Layout, store: Store, ready: list[QueueEntry], session: str, opts: gate.GateOpts) -> None:
    """Lanes across batches (pipeline.py) once batches fail often (`lanes`, `lanes_from`), else
    batches stacked on the one ahead (stack.py), on the first ready entry's base, until none can be
    opened; when the recent culprits call for the other, nothing more is opened, and the next round
    starts it once the batches in flight are done. Raises BaseMoved when no entry left the queue (so
    a base that keeps moving ends the drain)."""
    base = _base_of(store, ready[0]) or ""
    store.sync_base(base)
    ends = _lane_ends(layout, store, session)
    if _laned(layout, store):
        pipeline.drive(layout, store, opts, *ends,
                       lambda busy, room: _admit(layout, store, base, session, busy, room) if _laned(layout, store) else [])
    else:
        stack.drive(layout, store, opts, *ends,
                    lambda tip, busy: None if _laned(layout, store) else _admit_on(layout, store, base, session, tip, busy))
    _save_candidate(store, None)
    if {e.ref for e in ready} <= {e.ref for e in store.queue_entries()}:
        raise BaseMoved("nothing left the queue")


def _admit_on(layout: Layout, store: Store, base: str, session: str, tip: str | None, busy: set[str]) -> QueueCandidate | None:
    """The next batch of the entries on `base` not in flight (the drain's `_run`), built on `tip`
    (a batch in flight as it is expected to land), or on the base as it is now."""
    git = layout.git()
    on = tip or git.branch_head(base)
    if on is None:
        return None
    waiting = [e for e in store.queue_entries() if e.ref not in busy and _base_of(store, e) == base]
    ready = _ready(layout, store, waiting[: layout.config.queue.batch_max])
    built = candidate.build(git, on, _run(layout, store, ready)) if ready else None
    if built is None:
        return None
    _give_back_unbuilt(layout, store, built, base, on)
    return QueueCandidate(base_branch=base, old_base=on, parts=built.parts, pid=os.getpid(), session_id=session) if built.parts else None


def _admit(layout: Layout, store: Store, base: str, session: str, busy: set[str], room: int) -> list[QueueCandidate]:
    """New lanes for up to `room` free runners: the queue's entries on `base` in flight and the first
    2 x batch_max waiting, partitioned; each lane with nothing in flight, at most a batch of it (the
    drain's `_run`), built on the base as it is now."""
    git, cfg = layout.git(), layout.config.queue
    head = git.branch_head(base) if room > 0 else None
    if head is None:  # no runner free (asked after every verdict), or no base
        return []
    mine = [e for e in store.queue_entries() if _base_of(store, e) == base]
    waiting = {e.ref for e in _ready(layout, store, [e for e in mine if e.ref not in busy][: 2 * cfg.batch_max])}
    pool = [e for e in mine if e.ref in busy or e.ref in waiting]
    out: list[QueueCandidate] = []
    for lane in lanes.partition([git.changed_paths(head, e.sha) for e in pool], cfg.shared):
        if len(out) >= room:
            break
        if busy & {pool[i].ref for i in lane}:
            continue
        built = candidate.build(git, head, _run(layout, store, [pool[i] for i in lane]))
        _give_back_unbuilt(layout, store, built, base, head)
        if built.parts:
            out.append(QueueCandidate(base_branch=base, old_base=head, parts=built.parts, pid=os.getpid(), session_id=session))
    return out


def _gate_candidate(layout: Layout, store: Store, cand: QueueCandidate, opts: gate.GateOpts) -> gates.GateEvidence:
    return gate_with_retries(store, layout.config.queue.retries, [p.task for p in cand.parts], cand.parts[-1].tip,
                             lambda rerun: _gate_once(layout, store, cand, replace(opts, rerun=rerun)), opts.rerun)


def _gate_once(layout: Layout, store: Store, cand: QueueCandidate, opts: gate.GateOpts) -> gates.GateEvidence:
    one, git = cand.parts[0], layout.git()
    # A batch of one on the base it forked from: its merge commit has the task head's tree, so the gate
    # runs in the task worktree (a verdict is a tree's: reused for the commit that lands).
    same = len(cand.parts) == 1 and git.tree_of(one.tip) == git.tree_of(one.head)
    tf = store.read_task(one.task) if same else None
    ev = gate.run_in_task(layout, store, one.head, one.task, Path(tf.worktree), opts) if tf is not None else None
    return ev if ev is not None else gate.run(layout, store, cand.parts[-1].tip, [p.task for p in cand.parts], opts)


def _land(layout: Layout, store: Store, cand: QueueCandidate, ev: gates.GateEvidence, session: str) -> None:
    main_wt, below = base_worktree(layout.git(), cand.base_branch, store), cand.old_base
    for p in cand.parts:  # the approval, the branch and the main worktree's ignored files again, just before the base moves
        why = problem(layout, store, QueueEntry(p.ref, "", p.task, p.head)) or _ignored_in_the_way(main_wt, below, p.tip)
        below = p.tip
        if why is not None:
            evict(layout, store, QueueEntry(p.ref, "", p.task, p.head), "blocked", why, next=way_on(layout, store, p.task))
            raise BaseMoved(f"{p.task} may no longer land: rebuild without it")
    try:
        land(layout, store, cand, ev, session)
    except BaseMoved:
        _save_candidate(store, None)
        raise


def _ignored_in_the_way(main_wt: Path | None, below: str, tip: str) -> str | None:
    """An ignored file made in the main worktree while the task waited in the queue or was gated."""
    unmet = in_the_way(main_wt, Sha(below), Sha(tip)) if main_wt is not None else []
    return "; ".join(str(u) for u in unmet) or None


def _fail(layout: Layout, store: Store, e: QueueEntry, ev: gates.GateEvidence, tasks: list[str], *, back: bool) -> None:
    tf = store.read_task(e.task)
    session = tf.queued.session_id if tf and tf.queued else None
    evidence.record(store, e.task, ev, session, note=not back, batch=tasks)
    reason = ev.error or f"exit code {ev.exit_code}"
    why = f"the final gate failed on the batch {', '.join(tasks)} ({reason}); bisection names {e.task}" if back else f"gate 'final' failed ({reason})"
    evict(layout, store, e, "failed", why, gate_log=ev.log_path, batch=tasks, back_to_implementation=back, failed_tests=ev.failed_tests)


def _save_candidate(store: Store, cand: QueueCandidate | None) -> None:
    log = store.read_queue_log()
    log.candidate = cand
    store.write_queue_log(log)
