"""Merge step 3: the build gate on exactly the commit that will land, and its evidence."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from spark_git.core.errors import Failed
from spark_git.core.git import Git
from spark_git.core.proc import Ticker
from spark_git.gates import command as gates
from spark_git.gates import evidence, verdicts
from spark_git.ops.shared import envs, gatetree
from spark_git.ops.shared.merging.plan import Plan
from spark_git.state.store import Store

GATE_LEFT_CHANGES_HINT = "a gate must not change the files it tests; add its outputs (e.g. __pycache__/, build/) to .gitignore, then try again"


def record_gate(store: Store, task: str, ev: gates.GateEvidence, session: str | None, **extra: Any) -> None:
    evidence.record(store, task, ev, session, **extra)


def gate_failed(ev: gates.GateEvidence, task: str, what: str, retry: str) -> Failed:
    """The refusal of a failed gate: the log's tail, pytest's failing tests, how to run it again
    (`retry`: the spark-git command) or by hand."""
    reason = ev.error or f"exit code {ev.exit_code}"
    by_hand = f"cd {ev.worktree} && {ev.command if isinstance(ev.command, str) else shlex.join(ev.command or [])}"
    if ev.exit_code == 127:
        hint = f"the gate's command was not found in {ev.worktree}: install it there (or on its PATH), or fix gates.{ev.gate} in the config; then: {retry}"
    else:
        hint = f"read the log, fix the code, commit, and try again: {retry}"
    return Failed(
        f"{what}: gate {ev.gate!r} failed ({reason}); log: {ev.log_path}",
        hint=hint, next=[retry],
        details={"log_path": ev.log_path, "exit_code": ev.exit_code, "timed_out": ev.timed_out, "command": ev.command,
                 "failed_tests": ev.failed_tests, "unmet": ev.reports.unmet if ev.reports else [], "log_tail": gates.log_tail(ev.log_path), "retry": retry, "run_by_hand": by_hand},
        task=task,
    )


def verify(plan: Plan, *, rerun: bool = False, ticker: Ticker | None = None) -> gates.GateEvidence:
    """Runs gates.build on the agent head in a clean checkout of it (or reuses a passing verdict of its
    tree); refuses unless it passed on the agent head and left its checkout as it found it."""
    layout, task, agent, awt = plan.layout, plan.task, plan.agent, plan.awt
    ev = verdicts.run_configured(plan.store, "build", layout.config.gates, awt.cwd, layout.logs_dir(task),
                                 env=envs.for_worktree(plan.store, task, agent), rerun=rerun, ticker=ticker,
                                 place=lambda commit: gatetree.clean_checkout(plan.store, f"{task}/build", commit, task, agent))
    record_gate(plan.store, task, ev, plan.session, agent=agent)
    if not ev.passed:
        raise gate_failed(ev, task, f"{agent} was not merged into {task}", f"spark-git merge {task} --agent {agent}")
    after = awt.head_and_tree()
    if after is None or after[0] != plan.a_head or ev.commit != plan.a_head:  # same commit id ⇒ same tree
        raise Failed(f"{agent}'s branch changed while its gate ran ({plan.a_head[:12]} → {(after[0] if after else '?')[:12]}); nothing was merged", task=task)
    ran_in = Path(ev.worktree) if ev.ran else awt.cwd
    left = Git(ran_in).status()
    if left:
        raise Failed(f"the build gate left changes in {ran_in}; nothing was merged", details={"files": [str(s) for s in left]}, task=task,
                     hint=GATE_LEFT_CHANGES_HINT)
    return ev
