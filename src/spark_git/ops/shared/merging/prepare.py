"""Merge step 1: everything an agent merge checks and reads before it changes anything.

The result, a `Plan`, is what the later steps (rewrite, verify, land, record) work on; a queue of
merges reuses the same steps."""

from __future__ import annotations

import shlex
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Generic, TypeVar

from spark_git import protocol
from spark_git.core import suggest
from spark_git.core.errors import BadInput, Blocked
from spark_git.core.git import Git, LocalBranch, StatusEntry, branch_ref
from spark_git.core.layout import Layout
from spark_git.gates.base import MergeSubject
from spark_git.gates.registry import merge_checks
from spark_git.ops.shared.ignored import refuse_overwrite
from spark_git.ops.shared.merging.plan import Plan
from spark_git.ops.shared.merging.rewrite import recover
from spark_git.state.models import AgentEntry, Checkpoint, TaskFile
from spark_git.state.store import Store


def agent_entry(tf: TaskFile, agent: str) -> AgentEntry:
    if agent not in tf.agents:
        raise BadInput(f"task {tf.task_name!r} has no agent {agent!r}{suggest.did_you_mean(agent, tf.agents)}", details={"agents": sorted(tf.agents)}, task=tf.task_name,
                       next=[f"spark-git status {tf.task_name}"])
    return tf.agents[agent]


def existing_worktree(path: str, what: str, task: str) -> Git:
    if not Path(path).is_dir():
        raise Blocked(f"{what} {path} does not exist", next=[f"spark-git doctor {task}"], task=task)
    return Git(path)


def plan_problem(layout: Layout, tf: TaskFile, cp: Checkpoint) -> str | None:
    """ops/shared/signed.py's check of the plan approval, loaded only when a full-protocol task asks
    for it: a light merge (the everyday one) does not pay for the signature modules."""
    from spark_git.ops.shared import signed

    return signed.plan_problem(layout, tf, cp)


def unmet_blocked(what: str, unmet: list[protocol.Unmet], task: str) -> Blocked:
    return protocol.refuse(what, unmet, task, default_hint=None, dedupe=False)


def prepare(layout: Layout, store: Store, tf: TaskFile, agent: str, session: str | None) -> Plan:
    """Refuses (nothing changed) unless the protocol, both worktrees and every pre-merge gate allow a merge."""
    task = tf.task_name
    entry = agent_entry(tf, agent)
    unmet = protocol.merge_conditions(layout, tf, plan_problem)
    if unmet:
        raise unmet_blocked(f"cannot merge {agent} into {task}", unmet, task)
    awt = existing_worktree(entry.worktree, f"agent {agent}'s worktree", task)
    twt = existing_worktree(tf.worktree, "the task worktree", task)
    recovered = recover(layout, task, agent, awt)
    # Four independent reads, one git process each, run at once; judged below in the order the
    # checks are listed, so the refusal is the same as if they had run one after another.
    rebasing = _Read(awt.rebase_in_progress)
    a_state, t_state = _Read(awt.branch_and_status), _Read(twt.branch_and_status)
    refs = _Read(lambda: layout.git().refs(branch_ref(tf.task_branch), branch_ref(entry.branch), branch_ref(tf.base_branch)))
    a_dirty, t_dirty = _check_worktrees(tf, entry, awt, twt, rebasing, a_state, t_state)
    heads = refs.get()
    task_head, a_head = heads.get(branch_ref(tf.task_branch)), heads.get(branch_ref(entry.branch))
    if task_head is None or a_head is None:
        raise Blocked(f"branch {tf.task_branch if task_head is None else entry.branch} does not exist", next=[f"spark-git doctor {task}"], task=task)
    # oldest first: also the list of new commits (none, without a git process, when the heads are one commit)
    messages = layout.git().messages(f"{task_head}..{a_head}") if a_head != task_head else {}
    _check_base_not_merged(layout, tf, agent, awt, task_head, a_head, heads.get(branch_ref(tf.base_branch)), messages)
    if a_head != task_head:  # the rebase writes the task's new files into the agent's worktree, the landing the agent's into the task's
        refuse_overwrite(awt.cwd, a_head, task_head, task=task, what=f"rebasing {agent} onto {tf.task_branch}")
        refuse_overwrite(twt.cwd, task_head, a_head, task=task, what=f"merging {agent} into the task worktree")
    plan = Plan(layout, store, tf, agent, entry, session, awt, twt, task_head, a_head, messages, recovered)
    plan.original = {sha: sha for sha in messages}
    _run_gates(plan, a_dirty, t_dirty)
    return plan


_Status = tuple[LocalBranch | None, list[StatusEntry]]


def _check_worktrees(
    tf: TaskFile, entry: AgentEntry, awt: Git, twt: Git, rebasing: _Read[bool], a_state: _Read[_Status], t_state: _Read[_Status]
) -> tuple[list[StatusEntry], list[StatusEntry]]:
    task = tf.task_name
    if rebasing.get():
        raise Blocked(
            f"a rebase is in progress in {awt.cwd} (from `spark-git sync` or by hand)",
            hint="resolve the conflicts, `git add` them and `GIT_EDITOR=true git rebase --continue` (or `git rebase --abort`), then merge again",
            next=[f"cd {shlex.quote(str(awt.cwd))} && git status"], task=task,
        )
    (a_branch, a_dirty), (t_branch, t_dirty) = a_state.get(), t_state.get()
    if a_branch != entry.branch:
        raise Blocked(f"{awt.cwd} is on {a_branch or 'a detached HEAD'}, expected branch {entry.branch}", task=task)
    if t_branch != tf.task_branch:
        raise Blocked(f"{twt.cwd} is on {t_branch or 'a detached HEAD'}, expected branch {tf.task_branch}", task=task)
    return a_dirty, t_dirty


def _run_gates(plan: Plan, a_dirty: list[StatusEntry], t_dirty: list[StatusEntry]) -> None:
    """Every registered gate kind's pre-merge checks (clean trees, attribution), in registry order."""
    subject = MergeSubject(plan.task, plan.agent, plan.entry.branch, plan.awt, a_dirty, plan.twt, t_dirty, plan.messages,
                           plan.layout.config.attribution.mode)
    for gate, worktree in merge_checks(subject):
        gate.check(worktree, plan.task)


T = TypeVar("T")


class _Read(Generic[T]):
    """`fn()` started in a thread now (it waits on its own git process); `get()` gives its result
    or raises what it raised."""

    def __init__(self, fn: Callable[[], T]) -> None:
        self._fn = fn
        self._result: T | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._result = self._fn()
        except BaseException as e:  # handed to the caller by get()
            self._error = e

    def get(self) -> T:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._result  # type: ignore[return-value]


def _check_base_not_merged(layout: Layout, tf: TaskFile, agent: str, awt: Git, task_head: str, a_head: str, base_head: str | None,
                           messages: dict[str, str]) -> None:
    """Refuses an agent branch that holds commits of the base branch the task branch lacks (`git merge
    main` in the agent's worktree): merging would stamp and land them as the agent's own."""
    if not messages or base_head is None or base_head == tf.base_commit:
        return  # the base has not moved since the task branched: none of its commits can be new here
    theirs = set(messages) - set(layout.git().out("rev-list", a_head, f"^{task_head}", f"^{base_head}").split())
    if theirs:
        task = tf.task_name
        raise Blocked(
            f"agent {agent}'s branch {tf.agents[agent].branch} holds {len(theirs)} commit(s) already on {tf.base_branch} "
            f"(a `git merge {tf.base_branch}` in its worktree?): merging would land them as {agent}'s; nothing was merged",
            hint=f"the task takes {tf.base_branch}'s commits through `spark-git update {task}`, not through an agent: "
                 f"in {awt.cwd} undo the merge (e.g. `git reset --hard` to {agent}'s last own commit), then merge again",
            next=[f"git -C {shlex.quote(str(awt.cwd))} log --oneline --first-parent {task_head}..{a_head}"],
            details={"base_commits": sorted(theirs)}, task=task,
        )
