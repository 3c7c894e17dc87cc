"""The task protocol: states, transitions and their guards. (Filled in by the state-machine issue.)

`merge` and `complete` ask this module for the protocol's conditions so that every condition lives
in one place; each returns the unmet ones, empty when the operation may go ahead.
"""

from __future__ import annotations

from dataclasses import dataclass

from typing import Any

from . import audit
from .layout import Layout
from .models import TaskFile, Transition


@dataclass(frozen=True)
class Unmet:
    condition: str  # what does not hold, in a sentence
    fix: str | None = None  # the command that would make it hold

    def __str__(self) -> str:
        return f"{self.condition}" + (f"  → {self.fix}" if self.fix else "")


def merge_conditions(layout: Layout, tf: TaskFile) -> list[Unmet]:
    """Protocol conditions for `spark-git merge` (agent → task) beyond the merge gates."""
    return []


def complete_conditions(layout: Layout, tf: TaskFile, head: str) -> list[Unmet]:
    """Protocol conditions for `spark-git complete` (task → base) beyond approval and the final gate."""
    return []


def record_transition(
    layout: Layout, tf: TaskFile, to: str, session: str | None, reason: str, evidence: dict[str, Any] | None = None
) -> Transition:
    """Appends a transition to `tf.transition_log` (the caller saves tf, under the task mutex) and
    to the audit trail's `state_transitions`."""
    t = Transition(from_state=tf.state, to=to, session_id=session, reason=reason, evidence=evidence or {})
    tf.transition_log.append(t)
    tf.state = to  # type: ignore[assignment]
    audit.record(layout, tf.task_name, "state_transitions", t.model_dump(mode="json", by_alias=True), session=session)
    return t
