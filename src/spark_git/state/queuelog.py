"""The merge queue's record beside the queue refs (state/queuerefs.py): the candidate being gated (so a drain killed
after its landing can be finished) and the recent outcomes (what a waiting `complete` reads)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from spark_git.core.model import Model, empty_list
from spark_git.state.models import now

OUTCOMES_KEPT = 50  # recent outcomes shown by `spark-git queue`; older ones are in each task's audit trail
FLAKY_KEPT = 20  # recent flaky gate runs kept in the log


class CandidatePart(Model):
    task: str
    ref: str
    head: str  # the queued task head
    tip: str  # the candidate commit once this task's commits are applied


class QueueCandidate(Model):
    """A batch being gated or landed: the base it was built on and each task's commits applied in order."""

    base_branch: str
    old_base: str
    parts: list[CandidatePart]
    pid: int
    session_id: str | None = None
    started_at: str = Field(default_factory=now)
    landing: str | None = None  # the tip a compare-and-swap is about to put on the base
    gate: dict[str, Any] | None = None  # the evidence of the run that passed `landing`
    scratch: str | None = None  # a running candidate's scratch worktree (`[queue] parallel`: one each)


class QueueOutcome(Model):
    task: str
    ref: str
    head: str
    result: Literal["landed", "failed", "blocked"]
    reason: str
    landed_commit: str | None = None  # the merge commit the task landed as (its second parent is head)
    old_base: str | None = None
    new_base: str | None = None
    batch: list[str] = Field(default_factory=empty_list)
    gate_log: str | None = None
    gate: dict[str, Any] | None = None  # the final gate's evidence of the landed candidate
    main_worktree_updated: bool = False
    files: list[str] = Field(default_factory=empty_list)  # conflicting files
    failed_tests: list[str] = Field(default_factory=empty_list)  # the failing gate's test names (pytest), for the culprit
    sent_back: bool = False  # the culprit of a bisection, moved back to IMPLEMENTATION
    next: list[str] = Field(default_factory=empty_list)  # the command that takes a task the queue gave back further
    drained_by: int | None = None  # pid of the draining process
    at: str = Field(default_factory=now)


class FlakyGate(Model):
    """A candidate's final gate that failed and then passed on a retry (`[queue] retries`): recorded, nobody blamed."""

    command: list[str] | str | None
    tasks: list[str]  # the candidate's tasks
    tip: str  # the candidate commit gated
    failures: int  # failing runs before the pass
    failed_tests: list[str] = Field(default_factory=empty_list)  # of the first failing run (JUnit report, or pytest's output)
    log_path: str | None = None  # the first failing run's log
    at: str = Field(default_factory=now)


class QueueCounts(Model):
    """Counters for `queue --stats`, all kept from `since` (so their ratios compare like with like)."""

    since: str = Field(default_factory=now)
    gate_runs: int = 0
    landed: int = 0
    flaky: int = 0


class QueueLog(Model):
    candidate: QueueCandidate | None = None
    running: list[QueueCandidate] = Field(default_factory=empty_list)  # candidates being gated now; a killed drain's are dropped
    outcomes: list[QueueOutcome] = Field(default_factory=empty_list)
    gate_runs: int = 0  # final-gate runs of the queue, ever, a stopped one included (the benchmark reads it)
    stopped_runs: int = 0  # of those, runs the planner stopped once their verdict was no longer needed
    flaky: list[FlakyGate] = Field(default_factory=empty_list)  # the last FLAKY_KEPT
    counts: QueueCounts = Field(default_factory=QueueCounts)

    def outcome_for(self, ref: str) -> QueueOutcome | None:
        for o in reversed(self.outcomes):
            if o.ref == ref:
                return o
        return None
