"""The task's states (listed once, in state/models.py: task.json stores them) and the workflow
variants (which of them a task goes through)."""

from __future__ import annotations

from spark_git.state.models import State, TaskFile

__all__ = ["AGENT_ADD_STATES", "FULL", "SHORT", "VARIANTS", "State", "variant_of"]


# "full": every state. "short" (LOW risk, or MEDIUM docs/config-only): no IMPLEMENTATION, VALIDATION,
# REVIEW; the agents' work is merged in SYNTHESIS once the plan is approved. Neither skips the two
# human checkpoints (plan approval before leaving SYNTHESIS, AWAITING_USER_APPROVAL before COMPLETE).
FULL, SHORT = "full", "short"
VARIANTS = (FULL, SHORT)

# Agents may join only while requirements can still be gathered (INIT/CLASSIFIED: before they start).
AGENT_ADD_STATES = (State.INIT, State.CLASSIFIED, State.REQUIREMENTS, State.SYNTHESIS, State.IMPLEMENTATION)


def variant_of(tf: TaskFile) -> str:
    return tf.variant if tf.variant in VARIANTS else FULL
