"""`spark-git report` from inside an agent's box (issue 32): the box lets the agent write its worktree and
that worktree's admin dir, never `.git/spark` (the mutexes) nor the task's files. So the report is
handed in: written, evidence included, to `<admin dir>/spark-report.json`, a place only that agent's
box (and the coordinator) can write; the coordinator's next `advance`, `agent run` or `report` files it
through `reports.report`, attributed to the agent whose admin dir holds it, bound to the head it saw."""

from __future__ import annotations

import os
from pathlib import Path

from spark_git.clients.gitgrants import git_dirs
from spark_git.core.caller import agent_session
from spark_git.core.errors import BadInput, CorruptState
from spark_git.core.layout import Layout
from spark_git.core.model import Model
from spark_git.ops.life import reports
from spark_git.ops.shared.taskfile import load_task
from spark_git.state.files import read_optional, write_atomic, write_text_atomic
from spark_git.state.store import Store

HANDIN = "spark-report.json"


class HandIn(Model):
    task: str
    agent: str
    status: str
    decision: str | None = None
    feedback: str | None = None
    work_remaining: str | None = None
    report_path: str | None = None
    blocking: list[str] = []
    deferrable: list[str] = []
    scope: str | None = None
    evidence: dict[str, str] = {}  # file name -> its content (the box's files may be gone when it is filed)
    seen: str | None = None  # the task head when the agent reported


def boxed(layout: Layout) -> bool:
    """The caller cannot take spark-git's mutexes: it runs inside an agent's box."""
    d = layout.spark_dir
    return not os.access(d if d.is_dir() else d.parent, os.W_OK)


def hand_in(layout: Layout, worktree: Path, h: HandIn, evidence: list[str], cwd: Path) -> Path:
    """Writes the hand-in into the admin dir of `worktree` (the agent's own). The report's checks run
    now too, so bad input is refused here, where the agent sees it."""
    h.status, h.decision, h.scope = reports._checked(h.status, h.decision, h.feedback, h.scope)
    dirs = git_dirs(worktree)
    if dirs is None:
        raise BadInput(f"{worktree} is not an agent worktree: a report from a box is handed in from the agent's own worktree")
    for raw in evidence:
        p = Path(raw).expanduser()
        p = p if p.is_absolute() else cwd / p
        try:
            h.evidence[p.name] = p.read_text()
        except OSError as e:
            raise BadInput(f"--evidence {p}: cannot read it ({e.strerror or e})") from e
    if h.report_path:
        p = Path(h.report_path).expanduser()
        h.report_path = str(p if p.is_absolute() else cwd / p)
    path = dirs[0] / HANDIN
    write_atomic(path, h)
    return path


def file_handed_in(layout: Layout, store: Store, task: str) -> list[str]:
    """Files every hand-in the task's agents left; the agents filed. A hand-in naming another task or
    agent than the worktree it sits in is dropped (an agent reports only as itself)."""
    tf = load_task(store, task)
    filed = []
    for agent, e in tf.agents.items():
        dirs = git_dirs(Path(e.worktree))
        path = dirs[0] / HANDIN if dirs else None
        h = _read(path) if path else None
        if path is None or h is None:
            continue
        try:
            if (h.task, h.agent) == (task, agent):
                _file(layout, store, task, agent, h)
                filed.append(agent)
        except BadInput as err:  # evidence that does not validate: dropped, and said in the audit trail
            store.event(task, "handin_refused", session=agent_session(task, agent), agent=agent, error=err.message)
        path.unlink(missing_ok=True)
    return filed


def _read(path: Path) -> HandIn | None:
    try:
        return read_optional(path, HandIn)
    except CorruptState:  # a broken hand-in is dropped, never fatal to the coordinator's command
        path.unlink(missing_ok=True)
        return None


def _file(layout: Layout, store: Store, task: str, agent: str, h: HandIn) -> None:
    keep = layout.agent_dir(task, agent) / "runs"
    keep.mkdir(parents=True, exist_ok=True)
    files = []
    for name, text in h.evidence.items():
        p = keep / f"handin-{Path(name).name}"
        write_text_atomic(p, text)
        files.append(str(p))
    reports.report(layout, store, task, agent, status=h.status, session=agent_session(task, agent), decision=h.decision, feedback=h.feedback,
                   work_remaining=h.work_remaining, report_path=h.report_path, blocking=h.blocking, deferrable=h.deferrable, scope=h.scope,
                   cwd=keep, evidence=files, seen=h.seen)
