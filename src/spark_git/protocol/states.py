"""The task's states and the workflow variants (which of them a task goes through)."""

from __future__ import annotations

from enum import StrEnum

from spark_git.state.models import TaskFile


class State(StrEnum):
    # The values are the strings in task.json (state/models.py's TaskFile.state Literal).
    INIT = "INIT"
    CLASSIFIED = "CLASSIFIED"
    REQUIREMENTS = "REQUIREMENTS"
    SYNTHESIS = "SYNTHESIS"
    IMPLEMENTATION = "IMPLEMENTATION"
    VALIDATION = "VALIDATION"
    REVIEW = "REVIEW"
    SCOPE_NEGOTIATION = "SCOPE_NEGOTIATION"
    AWAITING_USER_APPROVAL = "AWAITING_USER_APPROVAL"
    COMPLETE = "COMPLETE"
    CLEANUP = "CLEANUP"
    ABANDONED = "ABANDONED"


# "full": every state. "short" (LOW risk, or MEDIUM docs/config-only): no IMPLEMENTATION, VALIDATION,
# REVIEW; the agents' work is merged in SYNTHESIS once the plan is approved. Neither skips the two
# human checkpoints (plan approval before leaving SYNTHESIS, AWAITING_USER_APPROVAL before COMPLETE).
FULL, SHORT = "full", "short"
VARIANTS = (FULL, SHORT)

# Agents may join only while requirements can still be gathered (INIT/CLASSIFIED: before they start).
AGENT_ADD_STATES = (State.INIT, State.CLASSIFIED, State.REQUIREMENTS, State.SYNTHESIS, State.IMPLEMENTATION)


def variant_of(tf: TaskFile) -> str:
    return tf.variant if tf.variant in VARIANTS else FULL
