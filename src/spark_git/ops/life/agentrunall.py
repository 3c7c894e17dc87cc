"""`agent run TASK --all`: every agent the task's protocol state asks for, headless, in parallel up to
`[agents] parallel`. Each agent is its own `spark-git agent run` process (its own runner, watchdog and
subreaper: core/proc.py cleans up after one run per process), dying with us (PR_SET_PDEATHSIG)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path

from spark_git import protocol
from spark_git.clients import runout
from spark_git.core import proc
from spark_git.core.errors import Blocked
from spark_git.core.layout import Layout, task_name
from spark_git.core.model import Model
from spark_git.ops.life import agentrun as one
from spark_git.ops.shared.taskfile import load_task, usable_status
from spark_git.protocol.context import entered_at
from spark_git.state.backends import open_store
from spark_git.state.models import TaskFile
from spark_git.state.store import Store

# protocol state -> the roles of the agents it asks for (None: every agent). IMPLEMENTATION asks its
# updaters, and its reviewers once every updater's work is done and merged (their approval of that
# head is what VALIDATION wants). VALIDATION asks none: `advance` runs the build gate itself.
ASKS: dict[str, tuple[str, ...] | None] = {
    protocol.State.REQUIREMENTS: None, protocol.State.SYNTHESIS: None, protocol.State.IMPLEMENTATION: ("updater",),
    protocol.State.REVIEW: ("reviewer",),
}


class Row(Model):
    agent: str
    client: str
    state: str = "waiting"  # waiting | running | reported | incomplete (it lacks what it owes) | failed
    elapsed_s: float = 0.0
    last_tool: str = ""
    report_status: str | None = None
    exit_code: int | None = None
    ended: str | None = None  # how it ended, as agentrun.ended says it
    reason: str | None = None  # a failure's cause: the client's last words (last line), or the refusal


class AgentRunAllData(Model):
    task: str
    task_state: str
    parallel: int
    runs: list[Row]
    next: list[str]


def asked(layout: Layout, store: Store, task: str) -> tuple[str, list[str]]:
    """(task state, the agents it asks for); refused (exit 3) when it asks for none."""
    tf = load_task(store, task)
    if layout.config.protocol == "light":
        roles: tuple[str, ...] | None = None
    elif tf.state in ASKS:
        roles = ASKS[tf.state]
        if tf.state == protocol.State.IMPLEMENTATION and updaters_done(layout, store, tf):
            roles = ("reviewer",)
    else:
        raise Blocked(f"task {task} is in {tf.state}, which asks no agent to run (REQUIREMENTS, SYNTHESIS: all; "
                      "IMPLEMENTATION: updaters, then reviewers; REVIEW: reviewers)", next=[f"spark-git status {task}"], task=task)
    agents = sorted(a for a, e in tf.agents.items() if roles is None or e.role in roles)
    if not agents:
        raise Blocked(f"task {task} in {tf.state} asks for {' or '.join(roles or ())} agents and has none", next=[f"spark-git status {task}"], task=task)
    return tf.state, agents


def updaters_done(layout: Layout, store: Store, tf: TaskFile) -> bool:
    """Every updater reported COMPLETE in this round of IMPLEMENTATION and its branch is in the task branch."""
    git = layout.git()
    head = git.branch_head(tf.task_branch)
    entered = entered_at(tf, protocol.State.IMPLEMENTATION) or ""
    for a, e in tf.agents.items():
        if e.role != "updater":
            continue
        st = usable_status(store, tf.task_name, a)
        if st is None or st.status != "COMPLETE" or st.task_state != protocol.State.IMPLEMENTATION or st.updated_at < entered:
            return False
        mine = git.branch_head(e.branch)
        if mine and head and not git.is_ancestor(mine, head):
            return False
    return True


def run_all(layout: Layout, task: str, client: str, *, prompt: str | None = None, extra: tuple[str, ...] = (),
            tick: Callable[[list[Row]], None] | None = None, unboxed: bool = False) -> AgentRunAllData:
    task = task_name(task)
    store = open_store(layout)
    state, agents = asked(layout, store, task)
    for a in agents:  # every refusal before anything starts
        one.prepared(layout, store, task, a, client, unboxed=unboxed)
    parallel = layout.config.agents.parallel or os.cpu_count() or 1
    rows = {a: Row(agent=a, client=client) for a in agents}
    starts: dict[str, float] = {}
    with ThreadPoolExecutor(max_workers=parallel) as pool:
        futures = [pool.submit(_child, layout, task, rows[a], starts, prompt, extra, unboxed) for a in agents]
        while wait(futures, timeout=0.25).not_done:  # the display refreshes between
            for r in rows.values():
                _peek(layout, task, r, starts)
            if tick is not None:
                tick(list(rows.values()))
        for f in futures:
            f.result()
    if tick is not None:
        tick(list(rows.values()))
    runs = list(rows.values())
    return AgentRunAllData(task=task, task_state=state, parallel=parallel, runs=runs, next=_next(layout, store, task, runs, client, extra))


def _child(layout: Layout, task: str, row: Row, starts: dict[str, float], prompt: str | None, extra: tuple[str, ...], unboxed: bool) -> None:
    argv = [sys.executable, "-m", "spark_git", "-C", str(layout.main_worktree), "--json", "agent", "run", task, row.agent,
            "--client", row.client, "--headless", *(["--prompt", prompt] if prompt else []), *(["--unboxed"] if unboxed else []), "--", *extra]
    t0 = starts[row.agent] = time.monotonic()
    row.state = "running"
    p = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL, preexec_fn=proc.die_with_parent, check=False)
    row.elapsed_s = round(time.monotonic() - t0, 1)
    try:
        answer = json.loads(p.stdout)
    except ValueError:
        answer = {}
    d = answer.get("data") or {}
    row.exit_code = d.get("exit_code", p.returncode)
    row.report_status = d.get("report_status")
    row.ended = d.get("ended")
    outcome = d.get("outcome")
    row.state = ("incomplete" if d.get("incomplete") else "reported") if outcome == "reported" else "interrupted" if outcome == "interrupted" else "failed"
    if row.state != "reported":
        words = str(d.get("incomplete") or d.get("last_words") or answer.get("summary") or p.stderr or f"exit {p.returncode}").strip()
        row.reason = (words.splitlines() or [""])[-1][-200:]


def _peek(layout: Layout, task: str, row: Row, starts: dict[str, float]) -> None:
    """The running agent's elapsed time and last tool call (from its newest run log)."""
    if row.state != "running":
        return
    row.elapsed_s = round(time.monotonic() - starts.get(row.agent, time.monotonic()), 1)
    logs = sorted((layout.agent_dir(task, row.agent) / "runs").glob("*.jsonl"), key=lambda p: p.stat().st_mtime)
    if logs:
        row.last_tool = runout.read(_tail(logs[-1])).last_tool or row.last_tool


def _tail(path: Path, window: int = 65536) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - window))
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def _next(layout: Layout, store: Store, task: str, rows: list[Row], client: str, extra: tuple[str, ...]) -> list[str]:
    """The coordinator's step after the runs: a failed run again (its client arguments kept), else what
    the state asks next (merge the updaters' work, approve the plan, advance)."""
    again = [one.again(task, r.agent, client, extra) for r in rows if r.state != "reported"]
    if again:
        return again
    tf = load_task(store, task)
    if layout.config.protocol == "light" or (tf.state == protocol.State.IMPLEMENTATION and not updaters_done(layout, store, tf)):
        return [f"spark-git merge {task} --all"]
    if tf.state == protocol.State.SYNTHESIS:
        return [f"spark-git approve {task} --plan"]
    return [f"spark-git advance {task}"] if tf.state in ASKS else [f"spark-git status {task}"]
