"""The JSON contract: the JSON Schema of every command's `data` (inside the envelope of DESIGN.md)
and of every file spark-git writes, generated from the pydantic models that produce them.

Models are named as "module:Class" and imported only when asked for, so `spark-git schema` stays a
registry rather than an import of the whole package."""

from __future__ import annotations

import importlib
from typing import Any

from pydantic import BaseModel

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
    "verify": "spark_git.ops.landing.verify:VerifyData",
    "accept": "spark_git.ops.landing.accept:AcceptData",
    "ci": "spark_git.ops.setup.ci:CiData",
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
    "init": "spark_git.ops.setup.init:InitData",
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
    "watch": "spark_git.ops.views.watch:WatchSnapshot",  # with --once
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


# The envelope every --json command prints and the `data` of an error (ops/views/envelope.py).
GENERIC: dict[str, str] = {"envelope": "spark_git.ops.views.envelope:Envelope", "error": "spark_git.ops.views.envelope:ErrorData"}


class SchemaData(Model):
    names: list[str]
    schemas: dict[str, dict[str, Any]]


def model_of(name: str) -> type[BaseModel] | None:
    """The model behind NAME (a command, a file or `envelope`/`error`); None if that module is absent."""
    spec = COMMANDS.get(name) or FILES.get(name) or GENERIC.get(name)
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
