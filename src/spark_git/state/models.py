"""Pydantic models of every file spark-git writes. Unknown keys are kept (extra="allow") so a newer
spark-git's fields survive an older one's rewrite."""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, PlainSerializer, WithJsonSchema

from spark_git.core.model import Model, empty_list

SCHEMA_VERSION = 1


class State(StrEnum):
    """The task's states: the one list (protocol/states.py and the transition table use it; the
    values are the strings in task.json)."""

    INIT = "INIT"
    CLASSIFIED = "CLASSIFIED"
    REQUIREMENTS = "REQUIREMENTS"
    SYNTHESIS = "SYNTHESIS"
    IMPLEMENTATION = "IMPLEMENTATION"
    VALIDATION = "VALIDATION"
    REVIEW = "REVIEW"
    SCOPE_NEGOTIATION = "SCOPE_NEGOTIATION"
    AWAITING_USER_APPROVAL = "AWAITING_USER_APPROVAL"
    COMPLETE = "COMPLETE"
    CLEANUP = "CLEANUP"
    ABANDONED = "ABANDONED"


# Stored as the plain string (also when code assigned one), and with the schema it had as a Literal:
# inline, not a $defs reference (`spark-git schema` is compared byte for byte).
StateField = Annotated[
    State,
    PlainSerializer(str, return_type=str),
    WithJsonSchema({"enum": [s.value for s in State], "title": "State", "type": "string"}),
]


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(s: str) -> datetime:
    return datetime.fromisoformat(s.replace("Z", "+00:00"))


class FileModel(Model):
    # A file spark-git writes: unknown keys are kept (a newer spark-git's fields survive this one's rewrite).
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class Transition(FileModel):
    from_state: str | None = Field(None, alias="from")
    to: str
    at: str = Field(default_factory=now)
    session_id: str | None = None
    reason: str | None = None
    evidence: dict[str, Any] = Field(default_factory=dict)
    protocol: str | None = None  # "light": recorded without the state conditions
    hash: str | None = None  # state/chain.py: sha256 over the previous entry's hash and this entry
    mac: str | None = None  # state/recordmac.py: HMAC of `hash` with the user's records key (no agent can compute it)


class WalkRules(FileModel):
    """The config's thresholds for a task's walk, fixed when it starts (like its protocol)."""

    requirements_min_bytes: int
    coverage_min: float | None = None
    veto: list[str] = Field(default_factory=empty_list)
    final_say: list[str] = Field(default_factory=empty_list)


class AgentEntry(FileModel):
    name: str
    branch: str
    worktree: str
    role: Literal["reviewer", "updater", "other"] = "other"
    added_at: str = Field(default_factory=now)
    last_merge_sha: str | None = None


class AgentAddition(FileModel):
    agent: str
    state: str
    at: str = Field(default_factory=now)
    why: str


class Checkpoint(FileModel):
    type: Literal["plan", "changes"] = "changes"
    commit_sha: str | None = None
    presented_at: str | None = None
    approved: bool = False
    approved_at: str | None = None
    approved_by: str | None = None
    task_md_sha256: str | None = None  # plan approval: the task.md it approved
    patch_id: str | None = None  # changes: `git patch-id --verbatim` of base...commit_sha (kept by an update that changes no content)
    signed: str | None = None  # the record the human signed (canonical JSON: ops/shared/signed.py); only a signed approval counts
    signature: str | None = None  # its SSH signature (`ssh-keygen -Y sign -n spark-git-approval`, armored)


class Complexity(FileModel):
    """Seed 002's complexity assessment, recorded at classification: a suggestion, the human decides."""

    score: int
    max_score: int = 10
    recommendation: Literal["LITE", "ASK", "FULL"]
    signals: list[str] = Field(default_factory=empty_list)
    suggested_protocol: Literal["light", "full"]  # ASK suggests light (002: default lite)
    protocol_in_effect: Literal["light", "full"] | None = None  # what the config says: the human's decision


class QueueMark(Model):
    """task.json's `queued` marker: the task waits in the merge queue and keeps its protocol state."""

    ref: str
    head: str  # the task head that was checked and queued
    session_id: str | None = None  # who asked; the drainer records the outcome in this session's name
    at: str = Field(default_factory=now)


class ForgeMark(Model):
    """task.json's `forge` marker (`complete --via gh|glab`): the PR/MR opened for the task head,
    with auto-merge on; `state` follows what `queue`/`status` last saw on the forge."""

    via: Literal["gh", "glab"]
    url: str
    number: str
    head: str  # the gated, approved task head that was pushed
    remote: str  # the git remote the branch was pushed to
    method: Literal["merge", "squash", "rebase"] = "merge"
    state: Literal["open", "merged", "closed"] = "open"
    session_id: str | None = None
    opened_at: str = Field(default_factory=now)
    merged_at: str | None = None
    merge_commit: str | None = None
    seen_at: str | None = None  # when the forge was last asked


class TaskFile(FileModel):
    """`<task>/task.json`: the ownership lock and the task's state."""

    schema_version: int = SCHEMA_VERSION
    task_name: str
    title: str | None = None
    session_id: str
    state: StateField = State.INIT
    created_at: str = Field(default_factory=now)
    last_active_at: str = Field(default_factory=now)
    base_branch: str
    base_commit: str
    task_branch: str
    worktree: str
    provisioning: Literal["in_progress", "done"] = "in_progress"
    required_agents: list[str] = Field(default_factory=empty_list)
    agents: dict[str, AgentEntry] = Field(default_factory=dict)
    agent_additions: list[AgentAddition] = Field(default_factory=empty_list)
    transition_log: list[Transition] = Field(default_factory=empty_list)
    risk: str | None = None
    variant: str | None = None
    # The protocol fixed when the task started: a config change affects new tasks only. None (a
    # task.json from before this field): the config's, as it was read then.
    protocol: Literal["full", "light"] | None = None
    rules: WalkRules | None = None  # [rules], [evidence] coverage_min, [scope]: fixed at start as well; None: the config's
    checkpoint: Checkpoint | None = None
    plan_approval: Checkpoint | None = None
    # The human's decisions on the changes and what became of them: approved, changes requested,
    # carried over an `update` (old head → new head, same patch id), voided by a changed patch.
    checkpoint_history: list[dict[str, Any]] = Field(default_factory=empty_list)
    reviews_since: str | None = None  # a reviewer's decision counts only if reported after this (a new round)
    complexity: Complexity | None = None  # set by classify (seed 002 assessment)
    queued: QueueMark | None = None
    forge: ForgeMark | None = None  # landing through the forge (`complete --via`)
    # Branches spark-git created for this task (none existed before): the only ones it may delete.
    created_branches: list[str] = Field(default_factory=empty_list)


class MainLock(FileModel):
    """`<tasks_root>/main/task.json`: who is operating on the main worktree directly."""

    schema_version: int = SCHEMA_VERSION
    session_id: str
    created_at: str = Field(default_factory=now)
    last_active_at: str = Field(default_factory=now)
    reason: str | None = None
    pid: int | None = None


class AuditTrail(FileModel):
    """`<task>/audit-trail.json`: everything that happened; kept after cleanup."""

    schema_version: int = SCHEMA_VERSION
    task_name: str
    session_id: str | None = None
    started_at: str = Field(default_factory=now)
    state_transitions: list[dict[str, Any]] = Field(default_factory=empty_list)
    agent_invocations: list[dict[str, Any]] = Field(default_factory=empty_list)
    commits: list[dict[str, Any]] = Field(default_factory=empty_list)
    build_verifications: list[dict[str, Any]] = Field(default_factory=empty_list)
    events: list[dict[str, Any]] = Field(default_factory=empty_list)


class AuditSnapshot(FileModel):
    """`<task>/audit-snapshot.json`: the summary written when a task ends (cleanup or abandon); kept.
    `task_json` is the final task.json, so the final state outlives the lock."""

    schema_version: int = SCHEMA_VERSION
    task_name: str
    final_state: str
    session_id: str | None = None
    title: str | None = None
    why: str | None = None
    created_at: str | None = None
    ended_at: str = Field(default_factory=now)
    base_branch: str | None = None
    base_commit: str | None = None
    task_branch: str | None = None
    task_head: str | None = None
    landed: bool = False  # the task head is contained in the base branch
    transitions: int = 0
    transitions_by_state: dict[str, int] = Field(default_factory=dict)
    agents: list[str] = Field(default_factory=empty_list)
    commits_total: int = 0
    commits_by_agent: dict[str, int] = Field(default_factory=dict)
    coordination_commits: int = 0
    gate_runs: int = 0
    gate_runs_passed: int = 0
    gates_all_passed: bool | None = None  # None: no gate ran
    archive_refs: list[dict[str, Any]] = Field(default_factory=empty_list)
    task_json: dict[str, Any] = Field(default_factory=dict)


class PortEntry(Model):

    port: int
    task: str
    agent: str | None = None
    worktree: str
    allocated_at: str = Field(default_factory=now)


class PortsFile(Model):
    """`<tasks_root>/ports.json`: SPARK_PORT of each worktree."""

    schema_version: int = 1
    ports: list[PortEntry] = Field(default_factory=empty_list)
