"""`agent add`: a new agent worktree branched from the task head, recorded with its justification."""

from __future__ import annotations

from collections.abc import Callable

from spark_git.core.errors import BadInput, Blocked
from spark_git.core.git import Git
from spark_git.core.layout import Layout, agent_name, task_name
from spark_git.core.model import Model
from spark_git.ops.shared.provision import ProvisionReport
from spark_git.ops.shared.taskfile import role_of, updating
from spark_git.ops.shared.worktrees import Created, Progress, ensure_worktree, quiet, setup_new, undo
from spark_git.state.files import write_text_atomic
from spark_git.state.locks import WORKTREES
from spark_git.state.models import AgentAddition, AgentEntry, TaskFile
from spark_git.state.report_evidence import AgentStatus
from spark_git.state.store import Store


class AgentAddData(Model):
    task: str
    agent: str
    branch: str
    worktree: str
    role: str
    state: str
    from_commit: str
    provisioning: list[ProvisionReport] = []


def add_agent(
    layout: Layout,
    store: Store,
    task: str,
    agent: str,
    *,
    why: str,
    session: str | None,
    role: str | None = None,
    guard: Callable[[TaskFile], None] | None = None,
    progress: Progress = quiet,
    no_setup: bool = False,
    owner: bool = True,
) -> AgentAddData:
    """`owner=False`: the caller need not own the task lock (an agent of the task asking for a worktree
    through its client's worktree hook; the hook established who it is)."""
    task = task_name(task)
    agent = agent_name(agent)
    if not why.strip():
        raise BadInput("--why needs a justification; it is recorded in task.json")
    if role is not None and role not in ("reviewer", "updater", "other"):
        raise BadInput(f"bad role {role!r}: use reviewer, updater or other")
    branch = layout.agent_branch(task, agent)
    path = layout.agent_worktree(task, agent)
    with updating(store, task, session, owner=owner) as tf:
        if agent in tf.agents:
            raise BadInput(f"agent {agent!r} is already part of task {task!r}", details={"worktree": tf.agents[agent].worktree}, task=task)
        if guard is not None:
            guard(tf)
        git = layout.git()
        head = _branch_point(git, tf, agent, branch)
        created = Created()
        progress(f"worktree {path} on branch {branch}")
        try:
            with store.mutex(WORKTREES):
                ensure_worktree(git, head, branch, path, {}, created)
            store.write_status(AgentStatus(agent=agent, task=task))
        except BaseException:
            undo(store, created)
            raise
        entry = AgentEntry(name=agent, branch=branch, worktree=str(path), role=role or role_of(layout, agent))
        tf.agents[agent] = entry
        tf.agent_additions.append(AgentAddition(agent=agent, state=tf.state, why=why))
        if tf.state in BEFORE_IMPLEMENTATION:
            _join_stakeholders(layout, tf, agent)
    store.event(task, "agent_added", session, agent=agent, state=tf.state, why=why, from_commit=head)
    reports = setup_new(store, task, [(agent, path)], no_setup, progress)
    return AgentAddData(task=task, agent=agent, branch=branch, worktree=str(path), role=entry.role, state=tf.state, from_commit=head, provisioning=reports)


# An agent that joins before IMPLEMENTATION is a stakeholder: required, listed in task.md, and it owes
# a requirements report (the guards of SYNTHESIS and IMPLEMENTATION check every agent's).
BEFORE_IMPLEMENTATION = ("INIT", "CLASSIFIED", "REQUIREMENTS", "SYNTHESIS")
STAKEHOLDERS = "## Stakeholder Agent Reports"


def _join_stakeholders(layout: Layout, tf: TaskFile, agent: str) -> None:
    if agent not in tf.required_agents:
        tf.required_agents.append(agent)
    md = layout.task_md(tf.task_name)
    if not md.is_file():
        return  # classify writes task.md with every agent of the task
    line = f"- {agent}: `{layout.task_dir(tf.task_name) / f'{tf.task_name}-{agent}-requirements.md'}`"
    lines = md.read_text(errors="replace").splitlines()
    if line in lines:
        return
    closing = "<!-- /spark-git:stakeholders -->"  # classify's generated list (ops/life/classify.py)
    at = next((i for i, x in enumerate(lines) if x.strip() == STAKEHOLDERS), None)
    if closing in lines:
        lines.insert(lines.index(closing), line)
    elif at is None:
        return  # no such section yet (task.md of `start --from`): classify writes it with every agent
    else:
        end = next((i for i in range(at + 1, len(lines)) if lines[i].startswith("#") or lines[i].startswith("<!--")), len(lines))
        while end > at + 1 and not lines[end - 1].strip():
            end -= 1
        lines.insert(end, line)
    write_text_atomic(md, "\n".join(lines) + "\n")


def _branch_point(git: Git, tf: TaskFile, agent: str, branch: str) -> str:
    """The task head the new agent branch starts from; refused if the branch name is unusable or taken."""
    task = tf.task_name
    if not git.is_valid_branch_name(branch):
        raise BadInput(f"bad agent name {agent!r}: {branch!r} is not a valid branch name", task=task)
    if git.branch_head(branch) is not None:
        raise BadInput(f"branch {branch} already exists for something else", task=task)
    head = git.branch_head(tf.task_branch)
    if head is None:
        raise Blocked(f"task branch {tf.task_branch} does not exist", next=[f"spark-git doctor {task}"], task=task)
    return head
