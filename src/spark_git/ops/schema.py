"""The JSON contract: the JSON Schema of every command's `data` (inside the envelope of DESIGN.md)
and of every file spark-git writes, generated from the pydantic models that produce them.

Models are named as "module:Class" and imported only when asked for, so `spark-git schema` stays a
registry rather than an import of the whole package."""

from __future__ import annotations

import importlib
from typing import Any

from pydantic import BaseModel, Field

from spark_git.core.errors import BadInput

# Command (as typed after `spark-git`) → model of the `data` it prints with --json on success;
# "cmd --opt" where an option changes the shape of that data.
COMMANDS: dict[str, str] = {
    "start": "spark_git.ops.start:StartData",
    "status": "spark_git.ops.status:StatusData",
    "agent add": "spark_git.ops.agent_add:AgentAddData",
    "abandon": "spark_git.ops.cleanup:EndData",
    "cleanup": "spark_git.ops.cleanup:EndData",
    "lock main": "spark_git.ops.mainlock:MainLockData",
    "unlock main": "spark_git.ops.mainlock:MainLockData",
    "merge": "spark_git.ops.merge:MergeData",
    "merge --all": "spark_git.ops.merge:MergeAllData",
    "sync": "spark_git.ops.sync:SyncData",
    "approve": "spark_git.ops.approvals:ApproveData",
    "approve --request-changes": "spark_git.ops.approvals:ChangesRequestedData",
    "approve --plan --request-changes": "spark_git.ops.approvals:PlanRejectedData",
    "update": "spark_git.ops.update:UpdateData",
    "complete": "spark_git.ops.complete:CompleteData",
    "queue": "spark_git.ops.queue.show:QueueData",
    "queue run": "spark_git.ops.queue.show:QueueRunData",
    "who": "spark_git.ops.history:WhoData",
    "log": "spark_git.ops.history:LogData",
    "archive list": "spark_git.ops.archive:ArchiveListData",
    "archive restore": "spark_git.ops.archive:RestoreData",
    "doctor": "spark_git.ops.doctor:DoctorData",
    "lock break": "spark_git.ops.doctor:LockBreakData",
    "advance": "spark_git.ops.advance:AdvanceData",
    "classify": "spark_git.ops.classify:ClassifyData",
    "report": "spark_git.ops.reports:ReportData",
    "audit": "spark_git.ops.reports:AuditData",
    "brief": "spark_git.ops.brief:BriefData",  # also printed bare (without the envelope) without --json
    "env": "spark_git.ops.envs:EnvData",
    "schema": "spark_git.ops.schema:SchemaData",
    "hook session-start": "spark_git.clients.checkpoint:SessionStartData",
    "hook worktree-create": "spark_git.ops.wthooks:WorktreeHookData",
    "hook worktree-remove": "spark_git.ops.wthooks:WorktreeHookData",
    "hooks install": "spark_git.clients.settings:HooksSetData",
    "hooks uninstall": "spark_git.clients.settings:HooksSetData",
    "hooks check": "spark_git.ops.hooksetup:HooksCheckData",
    "remote enable": "spark_git.ops.remote:RemoteData",
    "remote disable": "spark_git.ops.remote:RemoteData",
    "remote status": "spark_git.ops.remote:RemoteStatusData",
    "remote check": "spark_git.ops.remote:RemoteCheckData",
    "remote sync": "spark_git.ops.remote:RemoteStatusData",
    "heartbeat": "spark_git.ops.remote:HeartbeatData",
    "statusline": "spark_git.ops.statusline:StatuslineData",
}

# Files spark-git writes (and the config it reads) → model.
FILES: dict[str, str] = {
    "task.json": "spark_git.state.models:TaskFile",
    "status.json": "spark_git.state.models:AgentStatus",
    "audit-trail.json": "spark_git.state.models:AuditTrail",
    "audit-snapshot.json": "spark_git.state.models:AuditSnapshot",
    "main-lock.json": "spark_git.state.models:MainLock",  # <tasks_root>/main/task.json
    "ports.json": "spark_git.state.models:PortsFile",
    "queue.json": "spark_git.state.queuelog:QueueLog",  # <tasks_root>/.queue/queue.json
    "config": "spark_git.core.config:Config",
    "evidence": "spark_git.state.evidence_models:Evidence",  # status.json's `evidence`, as stored
    "evidence output": "spark_git.state.evidence_models:AgentOutput",  # report --evidence: 004 Universal Output JSON
    "evidence spark": "spark_git.state.evidence_models:SparkState",  # report --evidence: 000 SPARK state JSON  # .spark-git.toml, or [tool.spark-git] in pyproject.toml
}


class ErrorData(BaseModel):
    """`data` of a refused or failed command (status BLOCKED or FAIL): the message, a hint, and
    command-specific details (e.g. `path`, `owner`, `stderr`, `unmet`)."""

    model_config = {"extra": "allow"}
    error: str
    hint: str | None = None


class Envelope(BaseModel):
    """Every command's --json output: one object on stdout."""

    status: str = Field(description="OK | BLOCKED | FAIL", pattern="^(OK|BLOCKED|FAIL)$")
    summary: str
    task: str | None
    data: dict[str, Any] = Field(description="The command's model (see its schema) on OK; ErrorData otherwise.")
    next: list[str]


GENERIC: dict[str, type[BaseModel]] = {"envelope": Envelope, "error": ErrorData}


class SchemaData(BaseModel):
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
    return model.model_json_schema(by_alias=True, mode="serialization")


def collect(name: str | None) -> SchemaData:
    if name is not None:
        m = model_of(name)
        if m is None:
            raise BadInput(f"{name!r} is not available in this build of spark-git")
        return SchemaData(names=[name], schemas={name: schema_of(m)})
    models = available()
    return SchemaData(names=list(models), schemas={n: schema_of(m) for n, m in models.items()})
