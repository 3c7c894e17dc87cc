"""The coordinator's step a protocol state asks for first (issue 32): what `start`, `advance` and
`agent run` print as their first `next`, from one table."""

from __future__ import annotations

from spark_git.core.git import branch_ref
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


def first_step(task: str, state: str, protocol: str, agents: bool = True) -> list[str]:
    """Under protocol light agents work from the start (only merges and the change approval are kept);
    a task with no agent has none to run."""
    if protocol == "light":
        return [f"spark-git agent run {task} --all"] if state == State.INIT and agents else []
    step = STEP.get(state)  # type: ignore[call-overload]
    return [step.format(t=task)] if step else []


def after_merge(layout: Layout, store: Store, task: str, head: str | None = None) -> list[str]:
    """What the state asks once an agent's work landed on the task branch: in IMPLEMENTATION the next
    `agent run --all` (the remaining updaters, then the reviewers); in SYNTHESIS (a short task) advance;
    under protocol light the change approval. `head`: the task branch's head when the caller just landed it."""
    tf = load_task(store, task)
    if layout.config.protocol == "light":  # the other agents' work, then the human's approval of the changes
        git = layout.git()
        head = head or git.branch_head(tf.task_branch)
        rest = git.unmerged(head, [branch_ref(e.branch) for e in tf.agents.values()]) if head else set()
        return [f"spark-git merge {task} --all" if rest else f"spark-git approve {task} --changes"]
    if tf.state == State.SYNTHESIS:
        return [f"spark-git advance {task}"]
    return first_step(task, tf.state, layout.config.protocol) or [f"spark-git status {task}"]
