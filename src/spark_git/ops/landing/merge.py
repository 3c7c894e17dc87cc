"""`merge` (agent → task): prepare → rewrite → verify → land → record, under the task mutex.

Every ref move is a compare-and-swap or a `git merge --ff-only` in the worktree that has the branch
checked out; the commit that passed the build gate is the commit that lands."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from spark_git import protocol
from spark_git.core.errors import GitError, SparkError
from spark_git.core.layout import Layout, agent_name, task_name
from spark_git.core.model import Model
from spark_git.core.proc import Ticker
from spark_git.gates import command as gates
from spark_git.ops.shared import loopstep, radar
from spark_git.ops.shared.merging.plan import Plan
from spark_git.ops.shared.merging.prepare import plan_problem, prepare, unmet_blocked
from spark_git.ops.shared.merging.record import LandedCommit, land, record, record_unrecorded_landing
from spark_git.ops.shared.merging.rewrite import rebase, stamp, undo
from spark_git.ops.shared.merging.verify import verify
from spark_git.ops.shared.radar import Clash
from spark_git.ops.shared.taskfile import load_task, require_task, save_task
from spark_git.state import inflight
from spark_git.state.backends import open_store
from spark_git.state.locks import require_owner, task_mutex_name
from spark_git.state.models import TaskFile
from spark_git.state.store import Store

__all__ = ["LandedCommit", "MergeAllData", "MergeData", "merge", "merge_all"]


class MergeData(Model):

    task: str
    agent: str
    task_branch: str
    old_head: str
    new_head: str
    landed: list[LandedCommit]
    rebased: bool
    stamped: int  # commits whose message got the agent prefix / trailers
    archive_ref: str | None
    gate: gates.GateEvidence | None
    recovered: list[str] = []  # leftovers of a killed merge that this one cleaned up
    # merge --all: refused on the first pass, landed on the second once the agents below had landed
    second_pass: bool = False
    landed_after: list[str] = []
    first_refusal: str | None = None
    radar: list[Clash] = []  # other agents' unmerged work this agent's would conflict with (warned before the gate)
    then: list[str] = []  # the coordinator's step once this landed: what the task's state asks next (ops/shared/loopstep.py)


class MergeRefusal(Model):

    agent: str
    status: str  # BLOCKED | FAIL, as the single-agent merge would have printed
    exit_code: int
    error: str
    hint: str | None = None
    details: dict[str, Any] = {}
    next: list[str] = []
    passes: int = 1  # 2: tried again after other agents landed, and refused again


class MergeAllData(Model):

    task: str
    merged: list[MergeData]  # in the order tried; entries with no `landed` had nothing new
    refused: list[MergeRefusal]
    then: list[str] = []  # as MergeData's, once something landed


Warn = Callable[[str], None]


def merge(layout: Layout, task: str, agent: str, *, session: str | None, rerun: bool = False, ticker: Ticker | None = None, warn: Warn | None = None) -> MergeData:
    store = open_store(layout)
    d = _merge(layout, store, task_name(task), agent_name(agent), session, rerun, ticker, warn)
    d.then = loopstep.after_merge(layout, store, d.task, head=d.new_head) if d.landed else []
    return d


def _merge(layout: Layout, store: Store, task: str, agent: str, session: str | None, rerun: bool, ticker: Ticker | None, warn: Warn | None) -> MergeData:
    # Like tasks.updating(), but task.json is only written when something landed ("nothing new"
    # must change nothing, not even last_active_at).
    require_task(store, task)
    with store.mutex(task_mutex_name(task)):
        tf = load_task(store, task)
        require_owner(f"task {task!r}", tf.session_id, tf.last_active_at, session, task=task)
        data = _merge_locked(layout, store, tf, agent, session, rerun, ticker, warn)
        if data.landed or data.recovered:
            save_task(store, tf)
        return data


def merge_all(layout: Layout, task: str, *, session: str | None, rerun: bool = False, ticker: Ticker | None = None, warn: Warn | None = None) -> MergeAllData:
    """Every agent of the task, in the order they joined, each through the whole `merge` (its own
    gates, its own task-mutex hold). One agent's refusal does not stop the others; the protocol's
    and the owner's refusals are the same for every agent, so they stop the batch before it starts.
    A refused agent gets a second pass once others have landed after its attempt: join order is
    not dependency order (a test-writer's gate may need the code it tests to land first)."""
    task = task_name(task)
    store = open_store(layout)
    tf = load_task(store, task)
    require_owner(f"task {task!r}", tf.session_id, tf.last_active_at, session, task=task)
    unmet = protocol.merge_conditions(layout, tf, plan_problem)
    if unmet:
        raise unmet_blocked(f"cannot merge the agents of {task}", unmet, task)
    data = MergeAllData(task=task, merged=[], refused=[])
    landings: list[str] = []  # agents in the order they landed
    first: list[tuple[str, int, SparkError]] = []  # refused agent, landings before its attempt, why
    for agent in tf.agents:
        try:
            _merged(data, landings, _merge(layout, store, task, agent, session, rerun, ticker, warn))
        except SparkError as e:
            first.append((agent, len(landings), e))
    for agent, mark, why in first:
        after = landings[mark:]
        if not after:  # nothing landed since its attempt: the same merge again would be refused again
            data.refused.append(_refusal(agent, why, passes=1))
            continue
        try:
            d = _merge(layout, store, task, agent, session, rerun, ticker, warn)
        except SparkError as again:
            data.refused.append(_refusal(agent, again, passes=2))
            continue
        d.second_pass, d.landed_after, d.first_refusal = True, after, why.message
        _merged(data, landings, d)
    data.then = loopstep.after_merge(layout, store, task) if landings else []
    return data


def _merged(data: MergeAllData, landings: list[str], d: MergeData) -> None:
    data.merged.append(d)
    if d.landed:
        landings.append(d.agent)


def _refusal(agent: str, e: SparkError, passes: int) -> MergeRefusal:
    return MergeRefusal(agent=agent, status=e.status, exit_code=e.exit_code, error=e.message, hint=e.hint, details=e.details, next=e.next, passes=passes)


def _merge_locked(
    layout: Layout, store: Store, tf: TaskFile, agent: str, session: str | None, rerun: bool, ticker: Ticker | None, warn: Warn | None
) -> MergeData:
    plan = prepare(layout, store, tf, agent, session)
    if not plan.new:
        plan.recovered += record_unrecorded_landing(plan)
        return _data(plan, [], None)
    with inflight.marked(layout.logs_dir(plan.task), f"merge-{agent}", "merge", agent, worktree=str(plan.awt.cwd), commit=plan.a_head):
        return _merge_new(plan, rerun, ticker, warn)


def _merge_new(plan: Plan, rerun: bool, ticker: Ticker | None, warn: Warn | None) -> MergeData:
    """The agent has commits the task lacks: rebase, stamp, gate, land; a failing gate undoes the rebase."""
    original = plan.a_head
    rebase(plan)
    stamp(plan)
    if not plan.new:  # everything was already upstream after the rebase
        return _data(plan, [], None)
    clashes = _clashes(plan, warn)
    try:
        ev = verify(plan, rerun=rerun, ticker=ticker)
    except SparkError as e:
        try:
            undo(plan, original)
        except GitError:  # the gate left files behind (its own refusal says so); the archive ref keeps the old head
            pass
        e.details.setdefault("radar", [c.model_dump(mode="json") for c in clashes])
        raise
    land(plan)
    data = _data(plan, record(plan, ev), ev)
    data.radar = clashes
    return data


def _clashes(plan: Plan, warn: Warn | None) -> list[Clash]:
    """The other agents' unmerged work this agent's would conflict with, told to `warn` before the
    gate runs (a conflict found now is cheaper than one found after the gate and the next merge)."""
    try:
        found = radar.added_by(plan.git, plan.layout.repo.common_dir / "objects", plan.task_head, {a: e.branch for a, e in plan.tf.agents.items()}, plan.agent)
    except SparkError:
        return []  # the radar is advice: a merge never fails because of it
    for c in found:
        if warn is not None:
            warn(f"{plan.agent} conflicts with {c.other}'s unmerged work in {', '.join(c.files)}: whichever lands second will need `spark-git sync`")
    return found


def _data(plan: Plan, landed: list[LandedCommit], ev: gates.GateEvidence | None) -> MergeData:
    return MergeData(
        task=plan.task, agent=plan.agent, task_branch=plan.tf.task_branch, old_head=plan.task_head,
        new_head=plan.a_head if landed else plan.task_head, landed=landed, rebased=plan.rebased,
        stamped=plan.stamped if landed else 0, archive_ref=plan.archive_ref, gate=ev, recovered=plan.recovered,
    )
