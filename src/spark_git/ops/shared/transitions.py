"""`record_transition`: the one writer of the transition log (used by `advance`, `approve`,
`complete`, `cleanup` and the queue)."""

from __future__ import annotations

from typing import Any

from spark_git.state import chain, recordmac
from spark_git.state.models import TaskFile, Transition
from spark_git.state.store import Store


def record_transition(
    store: Store, tf: TaskFile, to: str, session: str | None, reason: str, evidence: dict[str, Any] | None = None
) -> Transition:
    """Appends a transition to `tf.transition_log` (the caller saves tf, under the task mutex) and
    to the audit trail's `state_transitions`."""
    to = str(to)  # a State member is stored as its plain value
    t = Transition(from_state=tf.state, to=to, session_id=session, reason=reason, evidence=evidence or {}, protocol=tf.protocol or store.layout.config.protocol)
    chain.append(tf.transition_log, t, recordmac.load_key(store.layout), tf.task_name)
    tf.state = to  # type: ignore[assignment]
    store.audit(tf.task_name, "state_transitions", t.model_dump(mode="json", by_alias=True), session=session)
    return t
