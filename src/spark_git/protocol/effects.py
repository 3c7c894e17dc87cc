"""What a transition does to the task when it goes through (besides the state and its log entry).
Effects change `ctx.tf` and stage documents in `ctx.writes`; the caller saves and writes them."""

from __future__ import annotations

from spark_git.protocol.context import Ctx, task_head
from spark_git.protocol.guards import rejecters
from spark_git.state.models import Checkpoint, now


def present_changes(ctx: Ctx) -> None:
    """Entering AWAITING_USER_APPROVAL: the task head (and its patch) is what the human is asked to approve."""
    pid = ctx.head_patch_id()
    ctx.tf.checkpoint = Checkpoint(type="changes", commit_sha=task_head(ctx), presented_at=now(), approved=False, patch_id=pid)
    ctx.evidence["task_patch_id"] = pid


def request_changes(ctx: Ctx) -> None:
    """The human sent the changes back: the presentation and its approval end, the decision is kept in
    `checkpoint_history`, and every reviewer must review again (`reviews_since`)."""
    at = now()
    decision = {**(ctx.decision or {}), "at": at}
    ctx.tf.checkpoint_history.append(decision)
    ctx.tf.checkpoint = None
    ctx.tf.reviews_since = at
    ctx.evidence["decision"] = decision


def void_plan_approval(ctx: Ctx) -> None:
    """Going back to SYNTHESIS or REQUIREMENTS: a new synthesis needs a new plan approval."""
    ctx.tf.plan_approval = None


def defer_follow_ups(ctx: Ctx) -> None:
    """SCOPE_NEGOTIATION → AWAITING_USER_APPROVAL: the deferred items become the task's follow-ups.md."""
    lines = [f"# Follow-ups deferred from {ctx.task}", ""]
    for a, st in rejecters(ctx):
        for item in getattr(st, "deferrable", None) or []:
            lines.append(f"- [{a}] {item}")
        for item in getattr(st, "blocking", None) or []:  # left only when the final say deferred them (guards.g_scope_to_awaiting)
            lines.append(f"- [{a}] {item} (BLOCKING for {a}; deferred by {ctx.evidence.get('final_say')}, who has the final say)")
    path = ctx.layout.task_dir(ctx.task) / "follow-ups.md"
    ctx.writes[path] = "\n".join(lines) + "\n"
    ctx.evidence["follow_ups"] = str(path)
