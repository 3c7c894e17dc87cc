"""The record of an agent's `agent run`: `<agent dir>/run.json` while it lives (the runner's pid),
and the `agent_run` events of the audit trail once over. Light: `status` reads it."""

from __future__ import annotations

from typing import Any

from spark_git.core.layout import Layout
from spark_git.core.model import Model
from spark_git.core.proc import pid_alive
from spark_git.state.files import read_optional
from spark_git.state.models import AuditTrail

RUN_FILE = "run.json"


class RunRecord(Model):
    task: str
    agent: str
    client: str
    mode: str  # headless | tmux
    pid: int
    started_at: str
    window: str | None = None  # tmux: TASK/AGENT


def running(layout: Layout, task: str, agent: str) -> RunRecord | None:
    """The agent's live run: its record, when the process it names is still there."""
    rec = read_optional(layout.agent_dir(task, agent) / RUN_FILE, RunRecord)
    return rec if rec is not None and alive(rec.pid) else None


alive = pid_alive


def left_behind(layout: Layout, task: str) -> list[dict[str, Any]]:
    """The task's run records whose process is gone (`doctor`): a run a crash or a kill -9 left behind."""
    out = []
    for rec_path in sorted((layout.task_dir(task) / "agents").glob(f"*/{RUN_FILE}")):
        rec = read_optional(rec_path, RunRecord)
        if rec is not None and not alive(rec.pid):
            out.append({"task": rec.task, "agent": rec.agent, "client": rec.client, "pid": rec.pid, "file": str(rec_path)})
    return out


def last_run(layout: Layout, trail: AuditTrail | None, task: str, agent: str) -> dict[str, Any] | None:
    """What `status` shows of the agent's runs: the live one (state running), else the last one's outcome."""
    live = running(layout, task, agent)
    if live is not None:
        return {"state": "running", **live.model_dump(exclude_none=True, exclude={"task", "agent"})}
    done = [e for e in (trail.events if trail else []) if e.get("kind") == "agent_run" and e.get("agent") == agent]
    if not done:
        return None
    keep = ("client", "outcome", "report_status", "exit_code", "duration_s", "tokens", "cost_usd", "at")
    return {"state": "done", **{k: done[-1][k] for k in keep if k in done[-1]}}
