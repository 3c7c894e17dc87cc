"""`spark-git brief <task> --agent A`: the agents' Universal Input JSON (seed 004) for dispatching A,
built from what spark-git already holds: task.md, the agents' reports, the task branch's diff, the
configured gates, the classification and the last gate result. Read-only: no lock is taken."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field

from spark_git.core import suggest
from spark_git.core.errors import BadInput
from spark_git.core.layout import Layout, agent_name, task_name
from spark_git.core.model import Model, empty_list
from spark_git.ops.life.owed import owed
from spark_git.ops.shared.taskfile import load_task
from spark_git.protocol.context import read_status, requirements_path
from spark_git.state.models import TaskFile
from spark_git.state.store import Store
from spark_git.state.taskmd import goal_of, task_md_sections

ChangeType = Literal["added", "modified", "deleted", "renamed"]
CHANGE_TYPES: dict[str, ChangeType] = {"A": "added", "C": "added", "M": "modified", "T": "modified", "D": "deleted", "R": "renamed"}
NON_GOALS = re.compile(r"^(non[- ]goals?|out of scope)$", re.IGNORECASE)
CONSTRAINTS = re.compile(r"^constraints?$", re.IGNORECASE)
# risk flags 004 names, from the classification's keywords and the complexity signals
FLAG_WORDS = {"security": ("security", "auth", "Security-sensitive"), "perf": ("performance", "concurrent", "Performance"),
              "breaking-change": ("breaking",)}


class ChangedFile(Model):
    path: str
    change_type: ChangeType
    old_path: str | None = None  # set when change_type is "renamed"


class BriefTask(Model):
    id: str
    title: str
    goal: str
    non_goals: list[str]
    context_files: list[str]
    session_changed_files: list[ChangedFile]
    constraints: list[str]
    acceptance_checks: list[str]
    risk_flags: list[str]


class RepoState(Model):
    branch: str
    ci_status: Literal["unknown", "green", "red"]
    last_failed_step: str | None = None
    head: str | None = None
    base_commit: str


class BriefData(Model):
    """Seed 004's Universal Input JSON for one agent (plus who it is for)."""

    task: BriefTask
    project_type: str = Field("mixed", description="004: web|api|cli|lib|mixed; spark-git does not guess, so mixed (apply every check).")
    repo_state: RepoState
    agent: str
    role: str
    task_state: str
    owes: list[str] = Field(default_factory=empty_list, description="What the agent's final Output JSON must carry in this state besides status and summary (ops/life/owed.py); `agent run` files it.")
    instructions: list[str] = Field(default_factory=empty_list, description="What the agent's session start says too: who it is, its worktree and branch, its goal, how it commits and reports.")


def brief(layout: Layout, store: Store, task: str, agent: str) -> BriefData:
    task, agent = task_name(task), agent_name(agent)
    tf = load_task(store, task)
    if agent not in tf.agents:
        raise BadInput(f"task {task!r} has no agent {agent!r}{suggest.did_you_mean(agent, tf.agents)}", details={"agents": sorted(tf.agents)}, task=task, next=[f"spark-git status {task}"])
    md = layout.task_md(task)
    sections = task_md_sections(md.read_text(errors="replace")) if md.is_file() else {}
    git = layout.git()
    head = git.branch_head(tf.task_branch)
    changed = [ChangedFile(path=p, change_type=CHANGE_TYPES.get(code, "modified"), old_path=old if code == "R" else None)
               for code, p, old in (name_status(git.run("diff", "--name-status", "-M", "-z", f"{tf.base_commit}..{head}").stdout) if head else [])]
    entry = tf.agents[agent]
    t = BriefTask(
        id=task, title=tf.title or task, goal=goal_of(sections, agent), non_goals=_items(sections, NON_GOALS),
        context_files=_context_files(store, tf), session_changed_files=changed,
        constraints=[
            f"work only in {entry.worktree} (branch {entry.branch}); commit there with the message prefix `[{agent}] `",
            "do not edit spark-git's files (task.json, status.json, audit-trail.json) by hand",
            f"report with: spark-git report {task} --agent {agent} --status COMPLETE --evidence <your output JSON>",
            *_items(sections, CONSTRAINTS),
        ],
        acceptance_checks=_checks(layout), risk_flags=_flags(tf),
    )
    from spark_git.clients.checkpoint import agent_lines, for_agent
    from spark_git.core.caller import agent_session

    me = for_agent(layout, store, {agent_session(task, agent)}, task, agent).agent
    return BriefData(task=t, repo_state=_repo_state(store, tf, head), agent=agent, role=entry.role, task_state=tf.state,
                     owes=[o.ask for o in owed(tf.state, entry.role)], instructions=agent_lines(me) if me else [])


def name_status(out: str) -> list[tuple[str, str, str | None]]:
    """Parses `git diff --name-status -M -z`: (status letter, path, old path of a rename or copy)."""
    parts = out.split("\0")
    res: list[tuple[str, str, str | None]] = []
    while len(parts) > 1 and parts[0]:
        two = parts[0][0] in "RC"  # -z: status, [old path,] path
        res.append((parts[0][0], parts[2] if two else parts[1], parts[1] if two else None))
        parts = parts[3 if two else 2:]
    return res


def _items(sections: dict[str, str], head: re.Pattern[str]) -> list[str]:
    body = next((b for h, b in sections.items() if head.match(h.strip())), "")
    return [re.sub(r"^[-*]\s+", "", ln.strip()) for ln in body.splitlines() if ln.strip()]


def _context_files(store: Store, tf: TaskFile) -> list[str]:
    layout = store.layout
    files = [layout.task_md(tf.task_name)]
    for a in tf.agents:  # every agent's requirements report (an unreadable status.json: the default path)
        files.append(requirements_path(layout, tf.task_name, a, read_status(store, tf.task_name, a)))
    return [str(f) for f in dict.fromkeys(files) if f.is_file()]


def _checks(layout: Layout) -> list[str]:
    g = layout.config.gates
    out = []
    for name, cmd in (("build", g.build), ("final", g.final)):
        if cmd:
            out.append(f"cmd: {cmd if isinstance(cmd, str) else ' '.join(cmd)}  (gates.{name})")
    return out or ["manual: no gate command is configured ([gates] build / final)"]


def _flags(tf: TaskFile) -> list[str]:
    said = " ".join([*getattr(tf, "classification", {}).get("keywords", []), *(tf.complexity.signals if tf.complexity else [])])
    flags = [flag for flag, words in FLAG_WORDS.items() if any(w in said for w in words)]
    return flags or ["none"]


def _repo_state(store: Store, tf: TaskFile, head: str | None) -> RepoState:
    trail = store.read_audit(tf.task_name)
    last = trail.build_verifications[-1] if trail and trail.build_verifications else None
    result = last.get("result") if last else None
    ci: Literal["unknown", "green", "red"] = "green" if result == "passed" else "red" if result else "unknown"
    failed = f"gates.{last.get('gate')} on {str(last.get('commit') or '?')[:12]}" if last and ci == "red" else None
    return RepoState(branch=tf.task_branch, ci_status=ci, last_failed_step=failed, head=head, base_commit=tf.base_commit)
