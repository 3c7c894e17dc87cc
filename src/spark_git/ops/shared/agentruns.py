"""The record of an agent's `agent run`: `<agent dir>/run.json` while it lives (the runner's pid),
and the `agent_run` events of the audit trail once over. Light: `status` reads it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from spark_git.core.layout import Layout
from spark_git.core.model import Model
from spark_git.core.proc import pid_alive
from spark_git.state.files import read_optional
from spark_git.state.models import AuditTrail

RUN_FILE = "run.json"
EXIT_FILE = "run.exit"  # a tmux run's client exit code, written by the window's shell as the client ends


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
    """The task's run records whose process is gone (`doctor`): a tmux window whose client ended, or a
    run a crash or a kill -9 left behind; each with how it ended (`ended`)."""
    out = []
    for rec_path in sorted((layout.task_dir(task) / "agents").glob(f"*/{RUN_FILE}")):
        rec = read_optional(rec_path, RunRecord)
        if rec is not None and not alive(rec.pid):
            code = exit_code(rec_path.parent)
            out.append({"task": rec.task, "agent": rec.agent, "client": rec.client, "pid": rec.pid, "file": str(rec_path), "mode": rec.mode,
                        "exit_code": code, "ended": ended_unrecorded(rec, code)})
    return out


def exit_code(agent_dir: Path) -> int | None:
    """The exit code a tmux window's shell wrote as its client ended (None: none written)."""
    try:
        return int((agent_dir / EXIT_FILE).read_text().strip())
    except (OSError, ValueError):
        return None


def ended_unrecorded(rec: RunRecord, code: int | None) -> str:
    """How a run nobody recorded ended: a tmux window's client with its exit code, else its runner gone."""
    if rec.mode == "tmux":
        return f"window closed, exited {code}" if code is not None else "window closed"
    return "its runner is gone (a crash or a kill)"


def last_run(layout: Layout, trail: AuditTrail | None, task: str, agent: str) -> dict[str, Any] | None:
    """What `status` shows of the agent's runs: the live one (state running), else the last one's outcome."""
    live = running(layout, task, agent)
    if live is not None:
        return {"state": "running", **live.model_dump(exclude_none=True, exclude={"task", "agent"})}
    gone = read_optional(layout.agent_dir(task, agent) / RUN_FILE, RunRecord)
    if gone is not None:  # ended, not yet recorded (doctor --fix records it): told as it is, not as the start
        code = exit_code(layout.agent_dir(task, agent))
        return {"state": "done", "client": gone.client, "outcome": "ended", "ended": ended_unrecorded(gone, code), "exit_code": code}
    done = [e for e in (trail.events if trail else []) if e.get("kind") == "agent_run" and e.get("agent") == agent]
    if not done:
        return None
    keep = ("client", "outcome", "ended", "report_status", "exit_code", "duration_s", "tokens", "cost_usd", "at")
    return {"state": "done", **{k: done[-1][k] for k in keep if k in done[-1]}}
