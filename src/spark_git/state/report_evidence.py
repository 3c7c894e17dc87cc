"""An agent's report (`<task>/agents/<agent>/status.json`, `AgentStatus`) and what it can hand in as
evidence with it (`report --evidence FILE`), as the source documents write it: the agents' Universal
Output JSON (seed 004) and the SPARK state JSON (seed 000). Unknown keys are kept (extra="allow"): the documents' examples carry more than the guards read."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from spark_git.core.model import Model, empty_list
from spark_git.state.models import FileModel, now


class _Open(Model):
    model_config = ConfigDict(extra="allow")


class OutputArtifacts(_Open):
    files_to_create_or_update: list[str] = Field(default_factory=empty_list)
    files_changed: list[str] = Field(default_factory=empty_list)
    tests_added_or_updated: list[str] = Field(default_factory=empty_list)
    commands_to_run: list[str] = Field(default_factory=empty_list)
    manual_steps: list[str] = Field(default_factory=empty_list)
    review_comments: list[str] = Field(default_factory=empty_list)
    findings: list[str] = Field(default_factory=empty_list)
    notes: list[str] = Field(default_factory=empty_list)


class OutputGates(_Open):
    meets_definition_of_done: bool | None = None
    needs_review: bool | None = None
    needs_tests: bool | None = None
    security_concerns: list[str] = Field(default_factory=empty_list)


class OutputNext(_Open):
    recommended_agent: str | None = None
    recommended_task_id: str | None = None
    reason: str | None = None


class AgentOutput(_Open):
    """Seed 004's Universal Output JSON: what an agent returns when it is done (or cannot be)."""

    status: Literal["OK", "BLOCKED", "NEEDS_INFO", "NEEDS_DECISION", "FAIL"]
    summary: str
    artifacts: OutputArtifacts = Field(default_factory=OutputArtifacts)
    gates: OutputGates = Field(default_factory=OutputGates)
    next: OutputNext | None = None


class SparkTesting(_Open):
    coverage: float | None = Field(None, ge=0, le=1, description="0.0-1.0")
    tests_total: int | None = Field(None, ge=0)
    tests_passed: int | None = Field(None, ge=0)
    tests_failed: int | None = Field(None, ge=0)


class SparkQuality(_Open):
    """The eight quality steps (`step_1_architecture` … `step_8_integration`, kept as extra keys;
    only testing is read) and the overall verdict."""

    step_6_testing: SparkTesting | None = None
    violations_total: int = Field(ge=0)
    can_proceed: bool


class SparkRun(_Open):
    status: Literal["pending", "running", "completed", "failed"]
    phase: int | None = None
    started_at: str | None = None
    completed_at: str | None = None


class SparkFiles(_Open):
    files_created: list[str] = Field(default_factory=empty_list)
    tests_executed: bool | None = None
    coverage_report: str | None = None


class SparkState(_Open):
    """Seed 000's SPARK state JSON: an agent's quality steps, tests, coverage and files."""

    id: str | None = None
    version: str | None = None
    agent: str | None = None
    task_description: str | None = None
    state: SparkRun | None = None
    quality: SparkQuality
    evidence: SparkFiles = Field(default_factory=SparkFiles)


class EvidenceFile(_Open):
    path: str
    sha256: str
    kind: Literal["output", "spark"]


class Evidence(_Open):
    """Stored in status.json with the report: what the agent handed in, bound to the task head."""

    output: AgentOutput | None = None
    spark: SparkState | None = None
    files: list[EvidenceFile] = Field(default_factory=empty_list)
    task_head: str | None = None


class AgentStatus(FileModel):
    """`<task>/agents/<agent>/status.json`: the agent's own report."""

    agent: str
    task: str
    # IN_PROGRESS, WAITING, MERGING: 003's intermediate statuses (none of them is COMPLETE).
    status: Literal["WORKING", "IN_PROGRESS", "WAITING", "MERGING", "COMPLETE", "BLOCKED", "ERROR", "NEW"] = "NEW"
    decision: Literal["APPROVED", "REJECTED", "PENDING"] | None = None
    round: int = 0
    last_review_sha: str | None = None
    last_review_patch_id: str | None = None  # patch id of base...last_review_sha (an update that keeps it keeps the review)
    last_merge_sha: str | None = None
    work_remaining: str | None = None
    feedback: str | None = None
    report_path: str | None = None
    updated_at: str = Field(default_factory=now)
    task_state: str | None = None  # the task's state when the agent reported
    task_head: str | None = None  # the task head when the agent reported
    blocking: list[str] = Field(default_factory=empty_list)  # SCOPE_NEGOTIATION: items that must be fixed now
    deferrable: list[str] = Field(default_factory=empty_list)  # items that may become follow-ups
    scope_decision: Literal["RESOLVE_NOW", "DEFER"] | None = None
    evidence: Evidence | None = None  # `report --evidence`: the agent's 004 output / 000 state JSON
    mac: str | None = None  # state/recordmac.py: HMAC with the user's records key, bound to this task and agent
