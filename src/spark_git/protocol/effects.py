"""What a transition does to the task when it goes through (besides the state and its log entry).
Effects change `ctx.tf` and stage documents in `ctx.writes`; the caller saves and writes them."""

from __future__ import annotations

from spark_git.protocol.context import Ctx, task_head
from spark_git.protocol.guards import rejecters
from spark_git.state.models import Checkpoint, now


def present_changes(ctx: Ctx) -> None:
    """Entering AWAITING_USER_APPROVAL: the task head is what the human is asked to approve."""
    ctx.tf.checkpoint = Checkpoint(type="changes", commit_sha=task_head(ctx), presented_at=now(), approved=False)


def void_plan_approval(ctx: Ctx) -> None:
    """Going back to SYNTHESIS or REQUIREMENTS: a new synthesis needs a new plan approval."""
    ctx.tf.plan_approval = None


def defer_follow_ups(ctx: Ctx) -> None:
    """SCOPE_NEGOTIATION → AWAITING_USER_APPROVAL: the deferred items become the task's follow-ups.md."""
    lines = [f"# Follow-ups deferred from {ctx.task}", ""]
    for a, st in rejecters(ctx):
        for item in getattr(st, "deferrable", None) or []:
            lines.append(f"- [{a}] {item}")
    path = ctx.layout.task_dir(ctx.task) / "follow-ups.md"
    ctx.writes[path] = "\n".join(lines) + "\n"
    ctx.evidence["follow_ups"] = str(path)
