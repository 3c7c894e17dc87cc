"""The JSON contract: the JSON Schema of every command's `data` (inside the envelope of DESIGN.md)
and of every file spark-git writes, generated from the pydantic models that produce them.

Models are named as "module:Class" and imported only when asked for, so `spark-git schema` stays a
registry rather than an import of the whole package."""

from __future__ import annotations

import importlib
from typing import Any

from pydantic import BaseModel, Field

from spark_git.core.errors import BadInput
from spark_git.core.model import Model

# Command (as typed after `spark-git`) → model of the `data` it prints with --json on success;
# "cmd --opt" where an option changes the shape of that data.
COMMANDS: dict[str, str] = {
    "start": "spark_git.ops.life.start:StartData",
    "status": "spark_git.ops.views.status:StatusData",
    "agent add": "spark_git.ops.life.agent_add:AgentAddData",
    "agent run": "spark_git.ops.life.agentrun:AgentRunData",
    "agent run --all": "spark_git.ops.life.agentrunall:AgentRunAllData",
    "abandon": "spark_git.ops.ending.cleanup:EndData",
    "cleanup": "spark_git.ops.ending.cleanup:EndData",
    "lock main": "spark_git.ops.shared.mainlock:MainLockData",
    "unlock main": "spark_git.ops.shared.mainlock:MainLockData",
    "merge": "spark_git.ops.landing.merge:MergeData",
    "merge --all": "spark_git.ops.landing.merge:MergeAllData",
    "sync": "spark_git.ops.landing.sync:SyncData",
    "approve": "spark_git.ops.landing.approvals:ApproveData",
    "approve --request-changes": "spark_git.ops.landing.approvals:ChangesRequestedData",
    "approve --plan --request-changes": "spark_git.ops.landing.approvals:PlanRejectedData",
    "update": "spark_git.ops.landing.update:UpdateData",
    "complete": "spark_git.ops.landing.complete:CompleteData",
    "complete --via": "spark_git.ops.landing.complete_via:ForgeCompleteData",
    "queue": "spark_git.ops.landing.queue:QueueData",
    "queue run": "spark_git.ops.landing.queue:QueueRunData",
    "queue --stats": "spark_git.ops.landing.queuestats:QueueStats",
    "who": "spark_git.ops.shared.history:WhoData",
    "log": "spark_git.ops.shared.history:LogData",
    "archive list": "spark_git.ops.ending.archive:ArchiveListData",
    "archive restore": "spark_git.ops.ending.archive:RestoreData",
    "doctor": "spark_git.ops.ending.doctor:DoctorData",
    "lock break": "spark_git.ops.ending.doctor:LockBreakData",
    "advance": "spark_git.ops.life.advance:AdvanceData",
    "classify": "spark_git.ops.life.classify:ClassifyData",
    "report": "spark_git.ops.life.reports:ReportData",
    "audit": "spark_git.ops.views.audit:AuditData",
    "brief": "spark_git.ops.life.brief:BriefData",  # also printed bare (without the envelope) without --json
    "env": "spark_git.ops.setup.env:EnvData",
    "schema": "spark_git.ops.views.schema:SchemaData",
    "hook session-start": "spark_git.clients.checkpoint:SessionStartData",
    "hook worktree-create": "spark_git.ops.life.wthooks:WorktreeHookData",
    "hook worktree-remove": "spark_git.ops.life.wthooks:WorktreeHookData",
    "hooks install": "spark_git.clients.settings:HooksSetData",
    "hooks uninstall": "spark_git.clients.settings:HooksSetData",
    "hooks check": "spark_git.ops.shared.hooksetup:HooksCheckData",
    "remote enable": "spark_git.ops.setup.remote:RemoteData",
    "remote disable": "spark_git.ops.setup.remote:RemoteData",
    "remote status": "spark_git.ops.shared.remote:RemoteStatusData",
    "remote check": "spark_git.ops.setup.remote:RemoteCheckData",
    "remote sync": "spark_git.ops.shared.remote:RemoteStatusData",
    "heartbeat": "spark_git.ops.setup.remote:HeartbeatData",
    "statusline": "spark_git.ops.views.statusline:StatuslineData",
}

# Files spark-git writes (and the config it reads) → model.
FILES: dict[str, str] = {
    "task.json": "spark_git.state.models:TaskFile",
    "status.json": "spark_git.state.report_evidence:AgentStatus",
    "audit-trail.json": "spark_git.state.models:AuditTrail",
    "audit-snapshot.json": "spark_git.state.models:AuditSnapshot",
    "main-lock.json": "spark_git.state.models:MainLock",  # <tasks_root>/main/task.json
    "ports.json": "spark_git.state.models:PortsFile",
    "queue.json": "spark_git.state.queuelog:QueueLog",  # <tasks_root>/.queue/queue.json
    "config": "spark_git.core.config:Config",
    "evidence": "spark_git.state.report_evidence:Evidence",  # status.json's `evidence`, as stored
    "evidence output": "spark_git.state.report_evidence:AgentOutput",  # report --evidence: 004 Universal Output JSON
    "evidence spark": "spark_git.state.report_evidence:SparkState",  # report --evidence: 000 SPARK state JSON  # .spark-git.toml, or [tool.spark-git] in pyproject.toml
}


class ErrorData(Model):
    """`data` of a refusal or failure raised as an error (`data_schema` "error"): the message, a hint,
    and the details that refusal gives; no other keys."""

    model_config = {"extra": "forbid"}
    error: str
    hint: str | None = None
    # ownership, mutexes and state
    owner: str | None = None
    last_active_at: str | None = None
    session: str | None = None
    mutex: str | None = None
    holder: dict[str, Any] | None = None
    state: str | None = None
    legal_next_states: list[str] | None = None
    unmet: list[str] | None = Field(default=None, description="Protocol conditions not met, each with the command that fixes it.")
    # the repository and the task's files
    path: str | None = None
    problem: str | None = None
    task_dir: str | None = None
    worktree: str | None = None
    agents: list[str] | None = None
    files: list[str] | None = None
    dirty: list[str] | None = None
    conflicts: list[str] | None = None
    collisions: Any = None
    commits: list[str] | None = None
    base_commits: list[str] | None = None
    existing: str | None = None
    name: str | None = None
    kind: str | None = None
    key: str | None = Field(default=None, description="The config key that is wrong.")
    locked: list[str] | None = Field(default=None, description="Locked worktrees (git worktree lock) and why.")
    errors: list[Any] | None = Field(default=None, description="Validation errors (bad config or input), as pydantic reports them.")
    # git and gate failures
    argv: list[str] | None = None
    returncode: int | None = None
    stderr: str | None = None
    cwd: str | None = None
    remote: str | None = Field(default=None, description="The git remote ([sync] remote) that failed.")
    command: Any = None
    exit_code: int | None = None
    timed_out: bool | None = None
    log_path: str | None = None
    log_tail: list[str] | None = None
    failed_tests: list[str] | None = None
    retry: str | None = None
    run_by_hand: str | None = None
    batch: list[str] | None = None
    queue_ref: str | None = None
    url: str | None = Field(default=None, description="`complete --via`: the PR/MR opened on the forge (auto-merge refused).")
    sent_back_to_implementation: bool | None = None
    radar: list[dict[str, Any]] | None = Field(default=None, description="A refused merge: the conflict radar's clashes with other agents' unmerged work (schema `status`, Clash).")
    traceback: str | None = Field(default=None, description="An internal error's (exit 70) traceback.")


class Envelope(Model):
    """Every command's --json output: one object on stdout."""

    model_config = {"extra": "forbid"}
    status: str = Field(description="OK | BLOCKED | FAIL", pattern="^(OK|BLOCKED|FAIL)$")
    summary: str
    task: str | None
    data: dict[str, Any] = Field(description="Follows the schema named by data_schema.")
    next: list[str] = Field(description="Shell commands that make progress from here, each accepted at this moment.")
    data_schema: str | None = Field(description='The schema `data` follows: "error" for a refusal or failure raised as an error, else the command\'s own (e.g. "merge --all", also when BLOCKED).')


GENERIC: dict[str, type[BaseModel]] = {"envelope": Envelope, "error": ErrorData}


class SchemaData(Model):
    names: list[str]
    schemas: dict[str, dict[str, Any]]


def model_of(name: str) -> type[BaseModel] | None:
    """The model behind NAME (a command, a file or `envelope`/`error`); None if that module is absent."""
    if name in GENERIC:
        return GENERIC[name]
    spec = COMMANDS.get(name) or FILES.get(name)
    if spec is None:
        raise BadInput(f"no schema named {name!r}", hint="`spark-git schema` lists them: " + ", ".join(names()))
    mod, _, cls = spec.partition(":")
    try:
        model: type[BaseModel] = getattr(importlib.import_module(mod), cls)
        return model
    except (ImportError, AttributeError):
        return None  # that part of spark-git is not built (yet)


def names() -> list[str]:
    return [*COMMANDS, *FILES, *GENERIC]


def available() -> dict[str, type[BaseModel]]:
    res = {}
    for n in names():
        m = model_of(n)
        if m is not None:
            res[n] = m
    return res


def schema_of(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema(by_alias=True, mode="serialization")
    _closed(schema)
    return schema


def _closed(node: Any) -> None:
    """Every object with named properties forbids other keys, unless its model says it keeps extra
    keys (the seeds' formats, which agents may extend): a consumer can rely on what it reads."""
    if isinstance(node, dict):
        if "properties" in node:
            node.setdefault("additionalProperties", False)
        for v in node.values():
            _closed(v)
    elif isinstance(node, list):
        for v in node:
            _closed(v)


def collect(name: str | None) -> SchemaData:
    if name is not None:
        m = model_of(name)
        if m is None:
            raise BadInput(f"{name!r} is not available in this build of spark-git")
        return SchemaData(names=[name], schemas={name: schema_of(m)})
    models = available()
    return SchemaData(names=list(models), schemas={n: schema_of(m) for n, m in models.items()})


def name_of(command: str, data: object) -> str | None:
    """The registry name of `command`'s data when it is `data`'s model ("merge" printing MergeAllData
    is "merge --all"); None when no registered model is `data`'s."""
    cls = type(data).__name__
    names = [n for n, spec in COMMANDS.items() if spec.endswith(f":{cls}") and model_of(n) is type(data)]
    return next((n for n in names if n == command or n.startswith(f"{command} --")), names[0] if names else None)
