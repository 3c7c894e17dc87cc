"""`audit`: a task's timeline, its agents' invocations and the smells worth a look."""

from __future__ import annotations

from typing import Any

from spark_git import protocol
from spark_git.core.errors import BadInput
from spark_git.core.git import Git, branch_ref
from spark_git.core.layout import Layout, task_name
from spark_git.core.model import Model
from spark_git.gates import attribution
from spark_git.ops.shared import signed
from spark_git.ops.shared.taskfile import usable_status
from spark_git.state import recordmac
from spark_git.state.audit import SECTIONS
from spark_git.state.backends import open_store
from spark_git.state.models import AuditTrail, TaskFile
from spark_git.state.store import Store


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
    problem = protocol.inconsistency(tf, recordmac.load_key(store.layout))
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
            st = usable_status(store, tf.task_name, a)
            if e.role == "reviewer" and st and st.decision == "APPROVED" and st.last_review_sha and \
                    not protocol.approval_holds(git, branch_ref(tf.base_branch), st.last_review_sha, st.last_review_patch_id, head):
                smells.append(f"reviewer {a}'s APPROVED is for {st.last_review_sha[:12]}, older than the task head {head[:12]} it would approve")
        smells += _approval_smells(store, tf, trail, head)
    return head, smells


def _approval_smells(store: Store, tf: TaskFile, trail: AuditTrail | None, head: str) -> list[str]:
    """An approval in task.json that no signature or no `approved` event backs (written by hand?)."""
    pa, out = tf.plan_approval, []
    if pa is not None and pa.approved and (wrong := signed.plan_problem(store.layout, tf, pa)) is not None:
        out.append(f"task.json's approval of the plan does not count: {wrong}")
    cp = tf.checkpoint
    if cp is None or cp.type != "changes" or not cp.approved:
        return out
    wrong = signed.problem(store.layout, tf, cp, head)
    if wrong is not None:
        out.append(f"task.json's approval of the changes does not count: {wrong}")
    signed_commit = signed.signed_commit(cp)
    events = trail.events if trail else []
    if not any(e.get("kind") == "approved" and e.get("what") == "changes" and e.get("commit_sha") in (cp.commit_sha, signed_commit) for e in events):
        out.append(f"task.json's approval of {str(cp.commit_sha)[:12]} has no `approved` event in the audit trail (written by hand?)")
    return out


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
