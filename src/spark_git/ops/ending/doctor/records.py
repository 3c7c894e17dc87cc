"""Records that must not change quietly (issues 23, 31): an approval in task.json, of the changes or of
the plan, that is not the human's valid signature for what it names (hand-written, edited, or signed
by a key not allowed), agents' reports without spark-git's MAC (a forged transition log is the state
check's finding: checks.py), and archive refs the audit trail names that are gone (an archive holds work
nobody else has). Reported only: the repair is the human's (approve again; restore the commit from a
clone or a reflog)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from spark_git.core.errors import SparkError
from spark_git.ops.ending.doctor.scan import Ctx, Finding
from spark_git.ops.shared import signed
from spark_git.state import recordmac
from spark_git.state.models import Checkpoint, TaskFile, now
from spark_git.state.report_evidence import AgentStatus
from spark_git.state.store import ARCHIVE_PREFIX

__all__ = ["check_approval", "check_archives", "check_reports", "named_archives"]


def check_reports(ctx: Ctx, task: str, tf: TaskFile | Any) -> None:
    """Agents' reports that do not carry spark-git's MAC for their agent (written by hand, from another
    agent's shell, copied): they count as no report; --fix moves one aside and starts a fresh one."""
    for agent in sorted(tf.agents) if isinstance(tf, TaskFile) else []:
        try:
            ctx.store.read_status(task, agent)
        except recordmac.UnauthenticReport as e:
            path = ctx.layout.agent_status(task, agent)
            aside = path.with_name(f"status.json.forged-{now().replace(':', '')}")
            ctx.add(Finding(where=task, kind="report-forged", problem=e.message,
                            repair=f"spark-git report {task} --agent {agent} --status ...  (the agent reports again), or --fix: move it to {aside.name} "
                                   "and start a fresh one (nothing is deleted)",
                            details=dict(agent=agent, path=str(path))),
                    _fresh_report(ctx, task, agent, aside), task)
        except SparkError:  # unreadable: check_files' finding
            continue


def _fresh_report(ctx: Ctx, task: str, agent: str, aside: Path) -> Callable[[], None]:
    def fix() -> None:
        try:
            ctx.store.read_status(task, agent)
            return  # reported again (or repaired) since we looked
        except recordmac.UnauthenticReport:
            pass
        path = ctx.layout.agent_status(task, agent)
        os.replace(path, aside)
        ctx.store.write_status(AgentStatus(agent=agent, task=task))
        ctx.store.event(task, "doctor_moved_forged_report", ctx.session, path=str(path), kept_as=str(aside))
    return fix


def check_approval(ctx: Ctx, tf: TaskFile) -> None:
    # Judged against what the record names (the commit; the plan's task.md digest), not the task now:
    # an approval a later change made stale is the protocol's business (it asks for a new one), not a forged record.
    cp, pa = tf.checkpoint, tf.plan_approval
    if cp is not None and cp.type == "changes" and cp.approved and cp.commit_sha:
        _invalid(ctx, tf, "changes", cp, signed.problem(ctx.layout, tf, cp, cp.commit_sha), {"commit_sha": cp.commit_sha})
    if pa is not None and pa.approved:
        _invalid(ctx, tf, "plan", pa, signed.plan_problem(ctx.layout, tf, pa), {"task_md_sha256": pa.task_md_sha256})


def _invalid(ctx: Ctx, tf: TaskFile, kind: str, cp: Checkpoint, wrong: str | None, what: dict[str, Any]) -> None:
    if wrong is None:
        return
    ctx.add(Finding(where=tf.task_name, kind="approval-invalid", problem=f"task.json records the {kind} as approved, but {wrong}",
                    repair=f"spark-git approve {tf.task_name} --{kind}  (the human approves again; a record nobody signed never counts)",
                    details=dict(approval=kind, **what, approved_by=cp.approved_by)))


def named_archives(events: list[dict[str, Any]]) -> dict[str, str]:
    """Archive ref → the kind of the event that names it."""
    out: dict[str, str] = {}
    for e in events:
        refs = [e.get("ref"), e.get("archive_ref"), *(e.get("archived") or [])]
        for r in refs:
            if isinstance(r, str) and r.startswith(ARCHIVE_PREFIX):
                out.setdefault(r, str(e.get("kind")))
    return out


def check_archives(ctx: Ctx, task: str) -> None:
    try:
        trail = ctx.store.read_audit(task)
    except SparkError:  # an unreadable trail is check_files' finding
        return
    named = named_archives(trail.events if trail else [])
    if not named:
        return
    have = ctx.git.refs(ARCHIVE_PREFIX + f"{task}/")
    for ref, kind in sorted(named.items()):
        if ref not in have:
            ctx.add(Finding(where=task, kind="archive-ref-missing",
                            problem=f"archive ref {ref}, named by the audit trail ({kind}), is gone: the work it kept may be lost",
                            repair=f"restore it from a clone or the reflog (`git update-ref {ref} <sha>`); `spark-git archive list {task}` shows what is left",
                            details=dict(ref=ref)))
