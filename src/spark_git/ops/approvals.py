"""`approve`: the human's approval of the task's changes (or, later, its plan), bound to a commit id.

The confirmation happens before the task mutex is taken (a human may take minutes to type); the
commit approved is fixed before asking, so what the human saw is what is recorded.
"""

from __future__ import annotations

import getpass
import os
import socket
from typing import Callable, Literal

from pydantic import BaseModel

from spark_git import protocol
from spark_git.state import audit
from spark_git.state import notes
from spark_git.core.errors import BadInput, Blocked
from spark_git.core.layout import Layout, task_name
from spark_git.state.models import Checkpoint, now
from spark_git.ops.tasks import load_task, updating

Kind = Literal["changes", "plan"]


class ApproveData(BaseModel):
    task: str
    kind: str
    commit_sha: str
    task_head: str
    approved_at: str
    approved_by: str
    via: str  # "terminal" or "non-interactive"


def who_approves(session: str | None) -> str:
    try:
        user = getpass.getuser()
    except Exception:  # no passwd entry (containers)
        user = os.environ.get("USER", "unknown")
    return f"{user}@{socket.gethostname()}" + (f" (session {session})" if session else "")


def approve(
    layout: Layout,
    task: str,
    *,
    kind: Kind = "changes",
    sha: str | None,
    session: str | None,
    interactive: bool,
    ask: Callable[[str], str] | None = None,
) -> ApproveData:
    """`ask(prompt)` returns what the human typed (only called when `interactive`)."""
    task = task_name(task)
    if kind not in ("changes", "plan"):
        raise BadInput(f"approve --{kind} is not supported")
    tf = load_task(layout, task)
    unmet = protocol.approve_conditions(layout, tf, kind)
    if unmet:
        raise protocol.refuse(f"cannot approve the {kind} of {task}", unmet, task)
    digest = protocol.task_md_digest(layout, task) if kind == "plan" else None
    if kind == "plan" and digest is None:
        raise Blocked(f"there is no plan to approve: {layout.task_md(task)} does not exist", next=[f"spark-git classify {task}"], task=task)
    git = layout.git()
    head = git.branch_head(tf.task_branch)
    if head is None:
        raise Blocked(f"task branch {tf.task_branch} does not exist", task=task)
    target = head
    if sha is not None:
        resolved = git.rev_parse(sha)
        if resolved is None:
            raise BadInput(f"{sha!r} is not a commit in this repository", task=task)
        if not git.is_ancestor(resolved, head):
            raise BadInput(f"{resolved[:12]} is not on the task branch {tf.task_branch}", task=task)
        target = resolved
    presented_at = now()
    if interactive:
        assert ask is not None
        subject = git.log_fields(f"-1", ["%s"], target)[0][0] if target else ""
        what = f"the plan of task {task!r} ({layout.task_md(task)}, sha256 {digest[:12]})" if digest else f"the changes of task {task!r} at {target[:12]} ({subject})"
        typed = ask(
            f"Approve {what}?\n"
            f"Type the task name to approve, anything else to refuse: "
        ).strip()
        if typed != task:
            raise Blocked(f"not approved: the confirmation did not match the task name {task!r}; nothing was recorded", task=task)
        via = "terminal"
    else:
        if not layout.config.approval.allow_non_interactive:
            raise Blocked(
                "approval needs a human at a terminal: stdin is not a terminal",
                hint="run `spark-git approve` yourself in a terminal, or set approval.allow_non_interactive = true in the repo's config",
                task=task,
            )
        via = "non-interactive"
    by = who_approves(session)
    with updating(layout, task, session, owner=False) as cur:
        cur_head = git.branch_head(cur.task_branch)
        if sha is None and cur_head != target:
            raise Blocked(f"the task head moved from {target[:12]} to {(cur_head or '?')[:12]} while you were confirming; nothing was recorded", task=task)
        at = now()
        if kind == "plan":
            if protocol.approve_conditions(layout, cur, kind) or protocol.task_md_digest(layout, task) != digest:
                raise Blocked(f"the task or its task.md changed while you were confirming; nothing was recorded", task=task)
            cur.plan_approval = Checkpoint(type="plan", commit_sha=target, presented_at=presented_at, approved=True, approved_at=at, approved_by=by, task_md_sha256=digest)
            cur.plan_approval.via = via  # type: ignore[attr-defined]
        else:
            cur.checkpoint = Checkpoint(type=kind, commit_sha=target, presented_at=presented_at, approved=True, approved_at=at, approved_by=by)
            cur.checkpoint.via = via  # type: ignore[attr-defined]  (extra field, kept by the model)
    notes.append(layout, target, {"kind": "approval", "what": kind, "task": task, "session": session, "by": by, "via": via})
    audit.event(layout, task, "approved", session, what=kind, commit_sha=target, by=by, via=via)
    return ApproveData(task=task, kind=kind, commit_sha=target, task_head=cur_head or target, approved_at=at, approved_by=by, via=via)
