"""What the guards look at: the `Ctx` handed to every guard and effect, and the readers of the facts
it holds (task.md, agent reports, recorded gate results)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from spark_git.core.errors import Blocked
from spark_git.core.git import Git, branch_ref
from spark_git.core.layout import Layout
from spark_git.state.models import Checkpoint, TaskFile, WalkRules
from spark_git.state.store import Store

if TYPE_CHECKING:
    from spark_git.state.report_evidence import AgentStatus

TASK_MD_SECTIONS = ("Task Objective", "Scope", "Stakeholder Agent Reports")


class BuildRun(Protocol):
    """The result of running the build gate (gates.command.GateEvidence has this shape)."""

    command: list[str] | str | None
    ran: bool
    passed: bool
    exit_code: int | None
    duration_s: float
    tree: str
    commit: str
    log_path: str | None
    tests: dict[str, int] | None
    error: str | None


# What is wrong with a recorded plan approval as the human's signature (None: it verifies). The ops layer
# provides it (ops/shared/signed.plan_problem, the one verifier of approvals): protocol/ checks no signature itself.
PlanCheck = Callable[[Layout, TaskFile, Checkpoint], str | None]


@dataclass
class Ctx:
    store: Store  # the command's one Store: every read of the guards goes through it
    tf: TaskFile
    session: str | None
    why: str | None = None
    dry: bool = False  # status: compute blockers without running a gate
    head: str | None = None
    statuses: dict[str, AgentStatus | None] = field(default_factory=dict)
    unusable: dict[str, str] = field(default_factory=dict)  # agent -> why its status.json counts as no report (forged, corrupt)
    evidence: dict[str, Any] = field(default_factory=dict)  # recorded with the transition
    # Runs the build gate on the task worktree; the ops layer provides it (None: nothing may run).
    run_build: Callable[[], BuildRun] | None = None
    verify_plan: PlanCheck | None = None  # None: no plan approval counts (fail closed)
    record_build: BuildRun | None = None  # a build the guard ran and saw pass, for ops to record
    writes: dict[Path, str] = field(default_factory=dict)  # documents the effects produced, to be written
    # The human's decision this transition carries out (`approve --request-changes`); None from `advance`.
    decision: dict[str, Any] | None = None
    _head_patch: list[str | None] = field(default_factory=list)  # cache: [patch id of base...head]

    @property
    def layout(self) -> Layout:
        return self.store.layout

    @property
    def protocol(self) -> Literal["full", "light"]:
        return protocol_of(self.layout, self.tf)

    @property
    def rules(self) -> WalkRules:
        return walk_rules(self.layout, self.tf)

    @property
    def task(self) -> str:
        return self.tf.task_name

    def git(self) -> Git:
        return self.layout.git()

    def advance_cmd(self, to: str) -> str:
        return f"spark-git advance {self.task} --to {to}"

    def head_patch_id(self) -> str | None:
        if not self._head_patch:
            head = task_head(self)
            self._head_patch.append(self.git().patch_id(branch_ref(self.tf.base_branch), head) if head else None)
        return self._head_patch[0]

    def holds(self, approved_sha: str | None, approved_patch_id: str | None) -> bool:
        """Does an approval of `approved_sha` (patch `approved_patch_id`) hold for the task head?"""
        head = task_head(self)
        if approved_sha and approved_sha == head:
            return True
        return approval_holds(self.git(), branch_ref(self.tf.base_branch), approved_sha, approved_patch_id, head, self.head_patch_id)


def approval_holds(git: Git, base: str, approved_sha: str | None, approved_patch_id: str | None, head: str | None,
                   head_patch_id: Callable[[], str | None] | None = None) -> bool:
    """THE rule for every approval (the human's change approval, a reviewer's APPROVED, the commit
    presented for approval): it holds for `head` if it approved that very commit, or a commit with
    the same patch (`git patch-id --verbatim` of `base`...commit), e.g. the one an `update` rebased.
    An approval recorded without a patch id gets it computed from its commit (still reachable:
    `update` archives old heads). No change at all (no patch) never matches by patch."""
    if not approved_sha or not head:
        return False
    if approved_sha == head:
        return True
    if git.rev_parse(approved_sha) is None:  # an approval of no commit holds nothing
        return False
    want = approved_patch_id or git.patch_id(base, approved_sha)
    if want is None:
        return False
    got = head_patch_id() if head_patch_id else git.patch_id(base, head)
    return got == want


def protocol_of(layout: Layout, tf: TaskFile) -> Literal["full", "light"]:
    """The task's own protocol (recorded at start), else the config's (a task from before the record)."""
    return tf.protocol or layout.config.protocol


def walk_rules(layout: Layout, tf: TaskFile) -> WalkRules:
    """The task's own walk rules (recorded at start), else the config's (a task from before the record)."""
    return tf.rules if tf.rules is not None else config_rules(layout)


def config_rules(layout: Layout) -> WalkRules:
    """The walk rules the config says now: what `start` records."""
    c = layout.config
    return WalkRules(requirements_min_bytes=c.rules.requirements_min_bytes, coverage_min=c.evidence.coverage_min,
                     veto=list(c.scope.veto), final_say=list(c.scope.final_say))


def make_ctx(store: Store, tf: TaskFile, session: str | None, why: str | None = None, dry: bool = False,
             run_build: Callable[[], BuildRun] | None = None, verify_plan: PlanCheck | None = None) -> Ctx:
    ctx = Ctx(store, tf, session, why, dry, run_build=run_build, verify_plan=verify_plan)
    for a in tf.agents:
        try:
            ctx.statuses[a] = store.read_status(tf.task_name, a)
        except Blocked as e:  # corrupt, or without its MAC (forged): counts as "no usable report", saying why
            ctx.statuses[a], ctx.unusable[a] = None, e.message
    return ctx


def read_status(store: Store, task: str, agent: str) -> AgentStatus | None:
    try:
        return store.read_status(task, agent)
    except Blocked:  # corrupt status.json, or one without its MAC: counts as "no usable report"
        return None


def task_head(ctx: Ctx) -> str | None:
    if ctx.head is None:
        ctx.head = ctx.git().branch_head(ctx.tf.task_branch)
    return ctx.head


def task_md_digest(layout: Layout, task: str) -> str | None:
    p = layout.task_md(task)
    return hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else None


def requirements_path(layout: Layout, task: str, agent: str, st: AgentStatus | None) -> Path:
    if st is not None and st.report_path:
        return Path(st.report_path)
    return layout.task_dir(task) / f"{task}-{agent}-requirements.md"


def build_evidence(store: Store, task: str, head: str, tree: str | None, since: str | None = None,
                   result: str = "passed", any_commit: bool = False) -> dict[str, Any] | None:
    """The newest `gates.build` result (`result`: passed or failed) recorded for this commit or its tree
    (or for any commit: `any_commit`) after `since`."""
    trail = store.read_audit(task)
    for e in (trail.build_verifications if trail else [])[::-1]:
        if e.get("gate") != "build" or e.get("result") != result:
            continue
        if since and str(e.get("at", "")) < since:
            continue
        if any_commit or e.get("commit") == head or (tree and e.get("tree") == tree):
            return e
    return None


def entered_at(tf: TaskFile, state: str) -> str | None:
    for t in reversed(tf.transition_log):
        if t.to == state:
            return t.at
    return None
