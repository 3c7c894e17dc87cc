"""Whether what task.json names (worktrees, branches) is what the layout derives for that task: a hand-
edited or stale path would make spark-git remove or delete something that is not the task's."""

from __future__ import annotations

from spark_git.core.errors import CorruptState
from spark_git.core.layout import Layout
from spark_git.core.paths import real
from spark_git.state.models import TaskFile


def layout_problem(layout: Layout, tf: TaskFile) -> str | None:
    """What in task.json the layout does not derive: a worktree or branch spark-git would then act on
    (remove, delete) although it is not this task's. None when everything matches."""
    task = tf.task_name
    wanted = [("task", tf.worktree, layout.task_worktree(task), tf.task_branch, layout.task_branch(task))]
    wanted += [(f"agent {a}", e.worktree, layout.agent_worktree(task, a), e.branch, layout.agent_branch(task, a)) for a, e in tf.agents.items()]
    for label, path, expected, branch, exp_branch in wanted:
        if real(path) != real(expected):
            return f"the {label} worktree is recorded as {path}, but this task's is {expected}"
        if branch != exp_branch and branch not in tf.created_branches:
            return f"the {label} branch is recorded as {branch!r}, but this task's is {exp_branch!r}"
    if tf.base_branch in [w[3] for w in wanted]:
        return f"the base branch {tf.base_branch!r} is recorded as one of this task's branches"
    return None


def check_recorded(layout: Layout, tf: TaskFile) -> None:
    """Refuses (exit 3, path named) a task.json naming paths or branches that are not the task's."""
    problem = layout_problem(layout, tf)
    if problem is not None:
        raise CorruptState(str(layout.task_json(tf.task_name)), problem + "; spark-git acts only on what the layout derives", task=tf.task_name)
