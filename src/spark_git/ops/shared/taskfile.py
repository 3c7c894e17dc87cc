"""Reading and updating a task's state (task.json in the local store) through the Store."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from spark_git import protocol
from spark_git.core import suggest
from spark_git.core.caller import is_self
from spark_git.core.errors import BadInput, CorruptState
from spark_git.core.layout import Layout
from spark_git.state.locks import require_owner, task_mutex_name
from spark_git.state.models import TaskFile, now
from spark_git.state.recorded import check_recorded
from spark_git.state.store import Store

if TYPE_CHECKING:
    from spark_git.state.report_evidence import AgentStatus


def load_task(store: Store, task: str, *, check: bool = True) -> TaskFile:
    """`check=False` is the escape hatch for `doctor`/`audit`: read a task.json whose state its
    transition_log cannot explain (hand-edited); every other command refuses it (exit 3)."""
    tf = store.read_task(task)
    if tf is None:
        raise no_task(store, task)
    if check:
        protocol.check_consistent(store, tf)
        check_recorded(store.layout, tf)  # every command acts only on the worktrees and branches the layout derives
    return tf


def no_task(store: Store, task: str) -> BadInput:
    """The refusal of a task name that does not exist, with the nearest that does."""
    near = suggest.near(task, store.task_names())
    return BadInput(f"no task {task!r}{suggest.did_you_mean(task, store.task_names())}: {store.layout.task_json(task)} does not exist",
                    hint="`spark-git status` lists the tasks", next=[f"spark-git status {near}" if near else "spark-git status"], task=task)


def require_task(store: Store, task: str) -> None:
    """Refuses a task that does not exist before anything (a lock file named after a typo) is made."""
    if not store.has_task(task):
        raise no_task(store, task)


def save_task(store: Store, tf: TaskFile) -> None:
    tf.last_active_at = now()
    store.write_task(tf)


@contextmanager
def updating(store: Store, task: str, session: str | None, *, owner: bool = True, agent: str | None = None) -> Iterator[TaskFile]:
    """Lock → re-read → (check owner) → let the caller change it → write. Nothing is written if the
    body raises. `agent`: that agent's own session may act too (report, sync for itself)."""
    require_task(store, task)
    with store.mutex(task_mutex_name(task)):
        tf = load_task(store, task)
        if owner and not (agent and is_self(session, task, agent)):
            require_owner(f"task {task!r}", tf.session_id, tf.last_active_at, session, task=task)
        yield tf
        save_task(store, tf)


def role_of(layout: Layout, agent: str) -> str:
    if agent in layout.config.agent_roles:
        return layout.config.agent_roles[agent]
    if agent.endswith("-reviewer"):
        return "reviewer"
    if agent.endswith("-updater"):
        return "updater"
    return "other"


def start_mutex_name(task: str) -> str:
    """The mutex `start` holds while it creates a task (doctor waits on it before repairing one)."""
    return f"start-{task}"


def usable_status(store: Store, task: str, agent: str) -> AgentStatus | None:
    """An agent's report; an unreadable one counts as none (a new report replaces it)."""
    try:
        return store.read_status(task, agent)
    except CorruptState:  # an unreadable report counts as none: the new one replaces it
        return None
