"""Merge steps 4 and 5: land (fast-forward the task branch to exactly the commit that passed) and
record (attribution notes, audit trail, the agent's last merge)."""

from __future__ import annotations

import os
from pathlib import Path

from spark_git.core import faults
from spark_git.core.errors import CorruptState, Failed
from spark_git.core.layout import Layout
from spark_git.core.model import Model
from spark_git.gates import attribution
from spark_git.gates import command as gates
from spark_git.ops.shared.merging.plan import Plan
from spark_git.state.audit import event_entry
from spark_git.state.files import write_atomic
from spark_git.state.models import TaskFile, now
from spark_git.state.store import Store


class LandedCommit(Model):
    sha: str
    original_sha: str | None = None  # before rebase/stamping, when it was rewritten
    subject: str
    files: list[str]


FF_MARKER = ".spark-merge-ff"  # in the task dir: "merge is fast-forwarding the task worktree"


def ff_marker(layout: Layout, task: str) -> Path:
    return layout.task_dir(task) / FF_MARKER


def land(plan: Plan) -> None:
    """Fast-forwards the task branch in the task worktree (git checks HEAD's old value)."""
    git, task, branch = plan.git, plan.task, plan.tf.task_branch
    faults.point("merge-before-ff")
    if git.branch_head(branch) != plan.task_head:  # cannot happen under the task mutex; never land over it
        raise Failed(f"task branch {branch} moved during the merge; nothing was merged", task=task)
    # While the fast-forward updates the files, a marker says so: a kill there leaves the task
    # worktree changed with its branch unmoved, which doctor then repairs (ops/ending/doctor/halfway.py).
    marker = ff_marker(plan.store.layout, task)
    write_atomic(marker, {"pid": os.getpid(), "to": plan.a_head, "at": now()})
    plan.twt.merge_ff_only(plan.a_head)
    marker.unlink(missing_ok=True)
    if git.branch_head(branch) != plan.a_head:  # the task worktree is on that branch (checked in prepare)
        raise Failed(f"fast-forward of {branch} did not land {plan.a_head[:12]}", task=task)
    faults.point("merge-after-ff")


def record(plan: Plan, ev: gates.GateEvidence) -> list[LandedCommit]:
    task, agent, branch, session = plan.task, plan.agent, plan.entry.branch, plan.session
    changes = plan.git.changes(f"{plan.task_head}..{plan.a_head}")
    landed = []
    for sha in plan.new:
        subject, files = changes.get(sha, ("", []))
        orig = plan.original.get(sha)
        landed.append(LandedCommit(sha=sha, original_sha=orig if orig != sha else None, subject=subject, files=[f[2] for f in files]))
    at = now()
    plan.store.add_notes(
        [(c.sha, {"kind": "attribution", "agent": agent, "task": task, "session": session, "branch": branch, "original": c.original_sha}) for c in landed]
        + [(plan.a_head, {"kind": "landed", "task": task, "agent": agent, "session": session, "gate_tree": ev.tree, "gate_ran": ev.ran,
                          "gate_passed": ev.passed, "log_path": ev.log_path})]
    )
    plan.store.audit_many(task, [  # one write of the trail for the landing: its commits and the event
        *(("commits", {"sha": c.sha, "agent": agent, "branch": branch, "time": at, "files": c.files, "message": c.subject,
                       "original_sha": c.original_sha}) for c in landed),
        event_entry("merged", session, agent=agent, old_head=plan.task_head, new_head=plan.a_head, commits=len(landed),
                    rebased=plan.rebased, stamped=plan.stamped),
    ], session=session)
    plan.entry.last_merge_sha = plan.a_head
    update_agent_status(plan.store, task, agent, plan.a_head)
    return landed


def update_agent_status(store: Store, task: str, agent: str, sha: str) -> None:
    """The agent's status.json mirrors last_merge_sha. An unreadable one is left as it is (doctor moves it
    aside): the merge has landed, and task.json, the record that counts, must still be written."""
    from spark_git.state.report_evidence import AgentStatus  # what a merge with nothing to land never defines

    try:
        st = store.read_status(task, agent) or AgentStatus(agent=agent, task=task)
    except CorruptState as e:
        store.event(task, "status_not_updated", None, agent=agent, last_merge_sha=sha, problem=e.message)
        return
    st.last_merge_sha = sha
    st.updated_at = now()
    store.write_status(st)


def record_unrecorded_landing(plan: Plan) -> list[str]:
    """A merge killed after its fast-forward but before its notes: the agent head is on the task
    branch but was never recorded. Record it now (attribution from the trailers the merge stamped)."""
    tf, agent, a_head, store, git = plan.tf, plan.agent, plan.a_head, plan.store, plan.git
    entry = plan.entry
    if a_head in (entry.last_merge_sha, tf.base_commit) or not git.is_ancestor(a_head, plan.task_head):
        return []
    objs = store.notes(a_head)
    if any(o.get("kind") == "landed" for o in objs):
        if not any(o.get("kind") == "landed" and o.get("agent") == agent and o.get("task") == tf.task_name for o in objs):
            return []
        # Noted as this agent's landing, but task.json was never written (the merge failed after its notes).
        entry.last_merge_sha = a_head
        update_agent_status(store, tf.task_name, agent, a_head)
        return [f"recorded last_merge_sha {a_head[:12]} of {agent}: its landing was noted but task.json was not updated"]
    since = entry.last_merge_sha if entry.last_merge_sha and git.is_ancestor(entry.last_merge_sha, a_head) else tf.base_commit
    mine = [(sha, subj) for sha, subj, body in git.log_fields(f"{since}..{a_head}", ["%H", "%s", "%B"], "--first-parent")
            if attribution.trailer_agent(body) == agent]
    if not mine:
        return []
    _record_recovered(plan, tf, mine, since, [o for o in objs if o.get("kind") == "gate"])
    entry.last_merge_sha = a_head
    update_agent_status(store, tf.task_name, agent, a_head)
    return [f"recorded {len(mine)} commit(s) of {agent} that a killed merge landed without notes"]


def _record_recovered(plan: Plan, tf: TaskFile, mine: list[tuple[str, str]], since: str, gate: list[dict[str, object]]) -> None:
    task, agent, session, branch = tf.task_name, plan.agent, plan.session, plan.entry.branch
    plan.store.add_notes(
        [(sha, {"kind": "attribution", "agent": agent, "task": task, "session": session, "branch": branch, "recovered": True}) for sha, _ in mine]
        + [(plan.a_head, {"kind": "landed", "task": task, "agent": agent, "session": session, "recovered": True,
                          "gate_passed": bool(gate and gate[-1].get("passed")), "gate_tree": gate[-1].get("tree") if gate else None})]
    )
    stats = plan.git.numstat(f"{since}..{plan.a_head}")
    for sha, subj in reversed(mine):
        plan.store.audit(task, "commits", {"sha": sha, "agent": agent, "branch": branch, "files": [f[2] for f in stats.get(sha, [])],
                                           "message": subj, "recovered": True}, session=session)
