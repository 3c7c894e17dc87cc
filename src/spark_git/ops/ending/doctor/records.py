"""Records that must not change quietly (issue 23): an approval in task.json that is not the human's
valid signature for the task head (hand-written, edited, or signed by a key not allowed), and archive
refs the audit trail names that are gone (an archive holds work nobody else has). Reported only:
the repair is the human's (approve again; restore the commit from a clone or a reflog)."""

from __future__ import annotations

from typing import Any

from spark_git.core.errors import SparkError
from spark_git.ops.ending.doctor.scan import Ctx, Finding
from spark_git.ops.shared import signed
from spark_git.state.models import TaskFile
from spark_git.state.store import ARCHIVE_PREFIX

__all__ = ["check_approval", "check_archives", "named_archives"]


def check_approval(ctx: Ctx, tf: TaskFile) -> None:
    # Judged against the commit the record names, not the task head: an approval a later merge made
    # stale is the protocol's business (it asks for a new one), not a forged record.
    cp = tf.checkpoint
    if cp is None or cp.type != "changes" or not cp.approved or not cp.commit_sha:
        return
    wrong = signed.problem(ctx.layout, tf, cp, cp.commit_sha)
    if wrong is not None:
        what: dict[str, Any] = {"commit_sha": cp.commit_sha, "approved_by": cp.approved_by}  # a finding's details, not an error's
        ctx.add(Finding(where=tf.task_name, kind="approval-invalid", problem=f"task.json records the changes as approved, but {wrong}",
                        repair=f"spark-git approve {tf.task_name} --changes  (the human approves again; a record nobody signed never lands)",
                        details=what))


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
