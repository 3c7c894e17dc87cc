"""The coordinator's step a protocol state asks for first (issue 32): what `start`, `advance` and
`agent run` print as their first `next`, from one table."""

from __future__ import annotations

from spark_git.core.layout import Layout
from spark_git.ops.shared.taskfile import load_task
from spark_git.protocol import State
from spark_git.state.store import Store

# state -> the coordinator's first step there (`{t}`: the task); states not listed: the guard's own hints
STEP = {
    State.INIT: "spark-git classify {t}",
    State.CLASSIFIED: "spark-git advance {t}",
    State.REQUIREMENTS: "spark-git agent run {t} --all",
    State.SYNTHESIS: "spark-git agent run {t} --all",
    State.IMPLEMENTATION: "spark-git agent run {t} --all",
    State.VALIDATION: "spark-git advance {t}",
    State.REVIEW: "spark-git agent run {t} --all",
    State.AWAITING_USER_APPROVAL: "spark-git approve {t} --changes",
    State.COMPLETE: "spark-git cleanup {t}",
}


def first_step(task: str, state: str, protocol: str) -> list[str]:
    """Under protocol light agents work from the start (only merges and the change approval are kept)."""
    if protocol == "light":
        return [f"spark-git agent run {task} --all"] if state == State.INIT else []
    step = STEP.get(state)  # type: ignore[call-overload]
    return [step.format(t=task)] if step else []


def after_merge(layout: Layout, store: Store, task: str) -> list[str]:
    """What the state asks once an agent's work landed on the task branch: in IMPLEMENTATION the next
    `agent run --all` (the remaining updaters, then the reviewers); in SYNTHESIS (a short task) advance."""
    tf = load_task(store, task)
    if layout.config.protocol == "light" or tf.state == State.SYNTHESIS:
        return [f"spark-git advance {task}" if tf.state == State.SYNTHESIS else f"spark-git status {task}"]
    return first_step(task, tf.state, layout.config.protocol) or [f"spark-git status {task}"]
