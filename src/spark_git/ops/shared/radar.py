"""Conflict radar: would the agents' unmerged branches conflict with each other or with the task head,
and on which files? Answered by `git merge-tree` (no worktree, index or ref touched) in two git
processes per task: one `for-each-ref --no-merged` finds the agents with unmerged work, one
`merge-tree --stdin` merges every pair of them, writing its trees to scratch objects that are
deleted after (the repository gains nothing, not even dangling objects)."""

from __future__ import annotations

from pathlib import Path

from spark_git.core import gitdrivers, gitmerge
from spark_git.core.git import Git, branch_ref
from spark_git.core.model import Model

OLD_GIT_NOTE = "conflict radar off: it needs git >= 2.38 (`git merge-tree --write-tree`)"


class Clash(Model):

    agent: str
    other: str | None  # another agent with unmerged work; None: the task head
    conflict: bool
    files: list[str]  # where merging the two would conflict; [] when it merges cleanly
    combined: list[gitdrivers.Combined] = []  # where it merges "cleanly" only through a configured merge driver


class Radar(Model):

    checked: list[Clash]  # every pair with unmerged work on both sides (agents with nothing unmerged are skipped)
    note: str | None = None  # why nothing was checked (e.g. git too old)

    @property
    def conflicts(self) -> list[Clash]:
        return [c for c in self.checked if c.conflict]


def unmerged(git: Git, task_head: str, branches: dict[str, str]) -> dict[str, str]:
    """agent → head, for the agents (name → branch) whose branch has commits the task head lacks."""
    if not branches:
        return {}
    owner = {branch_ref(b): a for a, b in branches.items()}
    out = git.out("for-each-ref", f"--no-merged={task_head}", "--format=%(objectname) %(refname)", *owner)
    heads = {ref: sha for sha, ref in (line.split(" ", 1) for line in out.splitlines())}
    return {a: heads[ref] for ref, a in owner.items() if ref in heads}  # in the task's agent order


AgentHead = tuple[str, str, int, int]  # agent, head, commits ahead of the task head, behind it
Pair = tuple[str, str | None, str, str]  # agent, other agent (None: the task head), the two commits


def pairs(task_head: str, agents: list[AgentHead]) -> list[Pair]:
    """What to check: each agent with unmerged work against the task head, and every two such agents."""
    busy = [(a, h, behind) for a, h, ahead, behind in agents if ahead > 0]
    out: list[Pair] = [(a, None, task_head, h) for a, h, _ in busy]
    out += [(a, b, hb, ha) for i, (a, ha, _) in enumerate(busy) for b, hb, _ in busy[i + 1:]]
    return out


def scan_many(git: Git, objects: Path, tasks: list[tuple[list[Pair], dict[str, int]]]) -> list[Radar]:
    """The radar of several tasks of one repo from one `merge-tree --stdin`. Each task: its pairs
    and each agent's commits behind the task head (an agent that is not behind merges by fast-forward:
    no git needed to know it cannot conflict)."""
    todo = [(a, b, ours, theirs) for ps, behind in tasks for a, b, ours, theirs in ps if b is not None or behind.get(a, 1)]
    found = gitmerge.conflicts_many(git, [(ours, theirs) for _, _, ours, theirs in todo], objects)
    if found is None:
        return [Radar(checked=[], note=OLD_GIT_NOTE) for _ in tasks]
    result = dict(zip(todo, found, strict=True))
    clean = [p for p in todo if not result[p]]
    hidden = {p: gitdrivers.combined(git, p[2], p[3]) for p in clean} if clean and gitdrivers.declared(git.cwd, objects.parent) else {}
    return [
        Radar(checked=[Clash(agent=p[0], other=p[1], conflict=bool(result.get(p)), files=result.get(p, []), combined=hidden.get(p, [])) for p in ps])
        for ps, _ in tasks
    ]


def added_by(git: Git, objects: Path, task_head: str, branches: dict[str, str], agent: str) -> list[Clash]:
    """The conflicts `agent`'s unmerged work would add for each other agent with unmerged work: files
    where the other's branch conflicts with the agent's but not with the task head alone (the agent's
    branch holds the task head, so a conflict the other already has with it is not the agent's)."""
    if len(branches) < 2:
        return []  # no other agent: no git process
    heads = unmerged(git, task_head, branches)
    if agent not in heads:
        return []
    others = [b for b in heads if b != agent]
    found = gitmerge.conflicts_many(git, [(heads[b], h) for b in others for h in (heads[agent], task_head)], objects)
    if found is None:
        return []
    out = []
    for i, b in enumerate(others):
        files = sorted(set(found[2 * i]) - set(found[2 * i + 1]))
        if files:
            out.append(Clash(agent=agent, other=b, conflict=True, files=files))
    return out
