"""Agent reports (`report` → agents/<A>/status.json), and what an agent hands in with `report --evidence FILE`:
each file is a seed-004 Universal Output JSON or a seed-000 SPARK state JSON (told apart by shape),
validated, digested, bound to the head."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from spark_git.core.config import format_validation_error
from spark_git.core.errors import BadInput
from spark_git.core.git import branch_ref
from spark_git.core.layout import Layout, agent_name, task_name
from spark_git.core.model import Model
from spark_git.ops.shared.taskfile import updating, usable_status
from spark_git.state.models import now
from spark_git.state.report_evidence import AgentOutput, AgentStatus, Evidence, EvidenceFile, SparkState
from spark_git.state.store import Store

STATUSES = ("WORKING", "IN_PROGRESS", "WAITING", "MERGING", "COMPLETE", "BLOCKED", "ERROR")
DECISIONS = ("APPROVED", "REJECTED", "PENDING")


class ReportData(Model):
    task: str
    agent: str
    role: str
    status: AgentStatus
    task_state: str


def report(
    layout: Layout, store: Store, task: str, agent: str, *, status: str, session: str | None, decision: str | None = None,
    feedback: str | None = None, work_remaining: str | None = None, report_path: str | None = None,
    blocking: list[str] | None = None, deferrable: list[str] | None = None, scope: str | None = None,
    cwd: Path | None = None, evidence: list[str] | None = None, seen: str | None = None,
) -> ReportData:
    """`seen`: the task head the agent worked on (`agent run` knows it); default: the head now."""
    task, agent = task_name(task), agent_name(agent)
    status, decision, scope = _checked(status, decision, feedback, scope)
    rp = None
    if report_path:
        p = Path(report_path).expanduser()
        rp = str(p if p.is_absolute() else (cwd or Path.cwd()) / p)
    with updating(store, task, session, agent=agent) as tf:
        if agent not in tf.agents:
            raise BadInput(f"task {task!r} has no agent {agent!r}", details={"agents": sorted(tf.agents)}, task=task, next=[f"spark-git status {task}"])
        entry = tf.agents[agent]
        head = seen or layout.git().branch_head(tf.task_branch)
        ev = load_evidence(list(evidence or []), cwd or Path.cwd(), head)
        old = usable_status(store, task, agent) or AgentStatus(agent=agent, task=task)
        st = AgentStatus(
            # a report that is no decision keeps the last one (an unfinished re-review does not erase it)
            agent=agent, task=task, status=status, decision=decision if decision or status == "COMPLETE" else old.decision,
            round=old.round + (1 if status == "COMPLETE" else 0),
            last_review_sha=head if entry.role == "reviewer" and decision else old.last_review_sha,
            last_review_patch_id=(layout.git().patch_id(branch_ref(tf.base_branch), head) if head and entry.role == "reviewer" and decision
                                  else old.last_review_patch_id),
            last_merge_sha=old.last_merge_sha or entry.last_merge_sha,
            work_remaining=work_remaining, feedback=feedback, report_path=rp or old.report_path, updated_at=now(),
            task_state=tf.state, task_head=head, blocking=list(blocking or []), deferrable=list(deferrable or []),
            scope_decision=scope, evidence=ev,
        )
        store.write_status(st)
        store.audit(task, "agent_invocations", {
            "agent": agent, "role": entry.role, "working_dir": entry.worktree, "status": status, "decision": decision,
            "round": st.round, "task_state": tf.state, "task_head": head, "report_path": st.report_path, "session_id": session,
            "evidence": [f.model_dump() for f in ev.files] if ev else None,
        }, session=session)
        return ReportData(task=task, agent=agent, role=entry.role, status=st, task_state=tf.state)


def _checked(status: str, decision: str | None, feedback: str | None, scope: str | None) -> tuple[str, str | None, str | None]:
    """--status, --decision and --scope normalized (upper case), refused if they do not go together."""
    status = status.strip().upper()
    if status not in STATUSES:
        raise BadInput(f"bad --status {status!r}: use {', '.join(STATUSES)}")
    if decision is not None:
        decision = decision.strip().upper()
        if decision not in DECISIONS:
            raise BadInput(f"bad --decision {decision!r}: use APPROVED, REJECTED or PENDING")
        if status != "COMPLETE" and decision != "PENDING":  # PENDING: a review under way
            raise BadInput("--decision goes with --status COMPLETE (a decision ends a review)")
        if decision == "REJECTED" and not (feedback or "").strip():
            raise BadInput("--decision REJECTED needs --feedback: say what must change")
    if scope is not None:
        scope = scope.strip().upper().replace("-", "_")
        if scope not in ("RESOLVE_NOW", "DEFER"):
            raise BadInput(f"bad --scope {scope!r}: use RESOLVE_NOW or DEFER")
    return status, decision, scope


# -- report --evidence ---------------------------------------------------------------------------


def load_evidence(paths: list[str], cwd: Path, head: str | None) -> Evidence | None:
    if not paths:
        return None
    ev = Evidence(task_head=head)
    for raw in paths:
        p = Path(raw).expanduser()
        p = p if p.is_absolute() else cwd / p
        data, digest = _read(p)
        kind = "spark" if "quality" in data else "output"
        if (ev.spark if kind == "spark" else ev.output) is not None:
            raise BadInput(f"--evidence {p}: a second {kind} JSON (give at most one 004 output and one 000 state JSON)")
        try:
            if kind == "spark":
                ev.spark = SparkState.model_validate(data)
            else:
                ev.output = AgentOutput.model_validate(data)
        except ValidationError as e:
            what = "SPARK state JSON (seed 000)" if kind == "spark" else "agent output JSON (seed 004)"
            raise BadInput(format_validation_error(f"{p} (as {what})", e), hint="`spark-git schema evidence` prints the expected shape",
                           details={"errors": e.errors(include_url=False, include_context=False)}) from e
        ev.files.append(EvidenceFile(path=str(p), sha256=digest, kind=kind))
    return ev


def _read(p: Path) -> tuple[dict[str, Any], str]:
    try:
        raw = p.read_bytes()
    except OSError as e:
        raise BadInput(f"--evidence {p}: cannot read it ({e.strerror or e})") from e
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise BadInput(f"--evidence {p}: not JSON ({e})") from e
    if not isinstance(data, dict):
        raise BadInput(f"--evidence {p}: expected a JSON object, got {type(data).__name__}")
    return data, hashlib.sha256(raw).hexdigest()
