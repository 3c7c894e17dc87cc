"""Agent reports (`report` → agents/<A>/status.json) and the audit view (`audit`: timeline + smells)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from spark_git import protocol
from spark_git.core.errors import BadInput, CorruptState
from spark_git.core.git import Git
from spark_git.core.layout import Layout, agent_name, task_name
from spark_git.core.model import Model
from spark_git.gates import attribution
from spark_git.ops.evidence import load_evidence
from spark_git.ops.taskfile import updating
from spark_git.state.audit import SECTIONS
from spark_git.state.backends import open_store
from spark_git.state.models import AgentStatus, AuditTrail, TaskFile, now
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
    layout: Layout, task: str, agent: str, *, status: str, session: str | None, decision: str | None = None,
    feedback: str | None = None, work_remaining: str | None = None, report_path: str | None = None,
    blocking: list[str] | None = None, deferrable: list[str] | None = None, scope: str | None = None,
    cwd: Path | None = None, evidence: list[str] | None = None,
) -> ReportData:
    task, agent = task_name(task), agent_name(agent)
    status, decision, scope = _checked(status, decision, feedback, scope)
    rp = None
    if report_path:
        p = Path(report_path).expanduser()
        rp = str(p if p.is_absolute() else (cwd or Path.cwd()) / p)
    store = open_store(layout)
    with updating(store, task, session, agent=agent) as tf:
        if agent not in tf.agents:
            raise BadInput(f"task {task!r} has no agent {agent!r}", details={"agents": sorted(tf.agents)}, task=task)
        entry = tf.agents[agent]
        head = layout.git().branch_head(tf.task_branch)
        ev = load_evidence(list(evidence or []), cwd or Path.cwd(), head)
        old = _usable_status(store, task, agent) or AgentStatus(agent=agent, task=task)
        st = AgentStatus(
            agent=agent, task=task, status=status, decision=decision,
            round=old.round + (1 if status == "COMPLETE" else 0),
            last_review_sha=head if entry.role == "reviewer" and decision else old.last_review_sha,
            last_review_patch_id=(layout.git().patch_id(tf.base_branch, head) if head and entry.role == "reviewer" and decision
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


def _usable_status(store: Store, task: str, agent: str) -> AgentStatus | None:
    try:
        return store.read_status(task, agent)
    except CorruptState:  # an unreadable report counts as none: the new one replaces it
        return None


# -- audit ----------------------------------------------------------------------------------------


class TimelineEntry(Model):
    at: str
    kind: str
    text: str


class AgentInvocations(Model):
    agent: str
    working_dir: str | None
    first_report: str
    last_report: str
    reports: int
    last_status: str | None


class AuditData(Model):
    task: str
    state: str | None
    head: str | None
    timeline: list[TimelineEntry]
    agents: list[AgentInvocations]
    smells: list[str]
    decisions: list[dict[str, Any]]  # the human's checkpoint decisions (plan approved/rejected, changes approved/requested, …)
    trail: dict[str, Any]


def _line(section: str, e: dict[str, Any]) -> str:
    if section == "state_transitions":
        return f"{e.get('from') or '-'} → {e.get('to')}" + (f"  ({e.get('reason')})" if e.get("reason") else "")
    if section == "agent_invocations":
        return f"{e.get('agent')} reports {e.get('status')}" + (f" {e.get('decision')}" if e.get("decision") else "") + f" in {e.get('task_state')} at head {str(e.get('task_head') or '?')[:12]}"
    if section == "commits":
        return f"{str(e.get('sha'))[:12]} by {e.get('agent')}: {e.get('message')}"
    if section == "build_verifications":
        return f"gate {e.get('gate')} {e.get('result')} on {str(e.get('commit') or '?')[:12]}" + (f" ({e.get('agent')})" if e.get("agent") else "")
    rest = {k: v for k, v in e.items() if k not in ("at", "kind", "session_id")}
    return f"{e.get('kind')} " + ", ".join(f"{k}={v}" for k, v in list(rest.items())[:4])


def audit_view(layout: Layout, task: str) -> AuditData:
    task = task_name(task)
    store = open_store(layout)
    trail = store.read_audit(task)
    tf = store.read_task(task)  # no consistency check: audit looks at hand edits
    if trail is None and tf is None:
        raise BadInput(f"no task {task!r}: neither task.json nor audit-trail.json exists under {layout.task_dir(task)}", task=task)
    timeline: list[TimelineEntry] = []
    agents: dict[str, AgentInvocations] = {}
    if trail is not None:
        for section in SECTIONS:
            for e in getattr(trail, section):
                timeline.append(TimelineEntry(at=str(e.get("at", "")), kind=section, text=_line(section, e)))
        for e in trail.agent_invocations:
            a = str(e.get("agent"))
            cur = agents.get(a)
            if cur is None:
                agents[a] = AgentInvocations(agent=a, working_dir=e.get("working_dir"), first_report=e["at"], last_report=e["at"], reports=1, last_status=e.get("status"))
            else:
                cur.last_report, cur.reports, cur.last_status = e["at"], cur.reports + 1, e.get("status")
    timeline.sort(key=lambda t: t.at)
    head, smells = _task_smells(store, tf, trail) if tf is not None else (None, [])
    snap = store.read_snapshot(task) if tf is None else None  # an ended task: its final task.json is in the snapshot
    decisions = tf.checkpoint_history if tf is not None else list((snap.task_json if snap else {}).get("checkpoint_history") or [])
    return AuditData(task=task, state=tf.state if tf else None, head=head, timeline=timeline, agents=list(agents.values()),
                     smells=smells, decisions=decisions, trail=trail.model_dump(mode="json") if trail else {})


def _task_smells(store: Store, tf: TaskFile, trail: AuditTrail | None) -> tuple[str | None, list[str]]:
    """The task head, and what task.json, the audit trail, the commits and the reports disagree on."""
    smells: list[str] = []
    problem = protocol.inconsistency(tf)
    if problem:
        smells.append(f"task.json was edited by hand: {problem}")
    recorded = {(t.get("from"), t.get("to"), t.get("at")) for t in (trail.state_transitions if trail else [])}
    for t in tf.transition_log[1:]:
        if (t.from_state, t.to, t.at) not in recorded:
            smells.append(f"transition {t.from_state} → {t.to} at {t.at} is in task.json but not in the audit trail (state skipped by hand-editing?)")
    git = store.layout.git()
    head = git.branch_head(tf.task_branch)
    if head:
        smells += _commit_smells(git, tf.base_commit, head)
        for a, e in tf.agents.items():
            st = _usable_status(store, tf.task_name, a)
            if e.role == "reviewer" and st and st.decision == "APPROVED" and st.last_review_sha and \
                    not protocol.approval_holds(git, tf.base_branch, st.last_review_sha, st.last_review_patch_id, head):
                smells.append(f"reviewer {a}'s APPROVED is for {st.last_review_sha[:12]}, older than the task head {head[:12]} it would approve")
    return head, smells


def _commit_smells(git: Git, base: str, head: str) -> list[str]:
    out: list[str] = []
    rows = git.log_fields(f"{base}..{head}", ["%H", "%B"])
    if not rows:
        return out
    unattributed = [sha for sha, body in rows if not (attribution.prefix_agent(body) or attribution.trailer_agent(body))]
    for sha in unattributed:
        out.append(f"commit {sha[:12]} on the task branch is not attributed to any agent")
    if len(rows) == 1 and unattributed:
        out.append(f"a single unattributed commit ({unattributed[0][:12]}) carries the whole task")
    return out
