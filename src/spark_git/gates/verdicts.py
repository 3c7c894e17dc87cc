"""Gate verdicts keyed by tree: every command-gate run is recorded as a note on the *tree* it tested
(`refs/notes/spark-verdicts`), keyed by the gate's fingerprint. Before a gate runs, a passing
verdict for the same tree and fingerprint is reused instead; a failing one never is (a failure is
always run again, so a flaky gate can still pass, and is flagged when it does).

The fingerprint is sha256 of the command, the timeout and the environment the gate is given, minus
the variables that name *where* it runs (`VOLATILE_ENV`): the same tree gated in an agent worktree
and then in the task worktree (merge, then complete) or in a queue's scratch worktree is one verdict.
A gate whose result depends on those variables (SPARK_PORT, SPARK_WORKTREE, ...) must not rely on
reuse: `--rerun` forces a fresh run. The fingerprint also holds the toolchain (gates/toolchain.py:
the executable, its venv's libraries), so a library changed outside the tree runs the gate again.

Every verdict carries an HMAC (gates/verdictkey.py: a per-repository key in the user's state
directory) over the tree and all its fields; one that does not verify (copied from another tree,
edited, written by hand or by an older spark-git) is ignored and the gate runs."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from spark_git.core.config import Command, GatesConfig, ReportSpec
from spark_git.core.git import Git, clean_env
from spark_git.core.proc import Ticker
from spark_git.gates import command as gate_command
from spark_git.gates import confine, toolchain, verdictkey
from spark_git.gates.evidence import GateEvidence
from spark_git.gates.reports import GateReports
from spark_git.state.models import now
from spark_git.state.store import Store

FINGERPRINT_VERSION = 2  # 2: the toolchain is part of it
# Per-worktree identity (spark-git's own SPARK_* of the worktree) and per-shell noise: they differ
# between the places one tree is gated, and would defeat reuse if hashed.
VOLATILE_ENV = frozenset({
    "SPARK_TASK", "SPARK_AGENT", "SPARK_SESSION_ID", "SPARK_WORKTREE", "SPARK_TASK_WORKTREE", "SPARK_PORT", "SPARK_QUEUE_BATCH", "SPARK_RUN_TOKEN",
    "PWD", "OLDPWD", "SHLVL", "_", "PYTEST_CURRENT_TEST", "TERM", "COLUMNS", "LINES", "COLORTERM",
    "SSH_CLIENT", "SSH_CONNECTION", "SSH_TTY", "SSH_AUTH_SOCK", "GPG_TTY", "WINDOWID", "TMUX", "TMUX_PANE", "STY", "WINDOW",
    "DISPLAY", "XDG_SESSION_ID", "XDG_VTNR", "DBUS_SESSION_BUS_ADDRESS", "TERM_SESSION_ID", "ITERM_SESSION_ID", "KITTY_WINDOW_ID",
})
VOLATILE_PREFIXES = ("SPARK_FAULT_", "VSCODE_", "TERM_PROGRAM")


def fingerprint(command: Command, timeout_s: float, env: dict[str, str] | None, reports: ReportSpec | None = None,
                cwd: Path | None = None) -> str:
    given = clean_env() if env is None else env  # what core.proc gives the gate when env is None
    kept = {k: v for k, v in given.items() if k not in VOLATILE_ENV and not k.startswith(VOLATILE_PREFIXES)}
    payload: dict[str, Any] = {"v": FINGERPRINT_VERSION, "command": command, "timeout_s": float(timeout_s), "env": kept,
                               "toolchain": toolchain.fingerprint(command, given, cwd)}
    if reports is not None:  # a verdict that passed without a threshold says nothing about one; gates without reports keep their fingerprints
        payload["reports"] = reports.fingerprint()
    return hashlib.sha256(json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _where(env: dict[str, str] | None, worktree: Path) -> str:
    env = env or {}
    task, agent = env.get("SPARK_TASK"), env.get("SPARK_AGENT")
    return f"{task}/{agent}" if task and agent else task or str(worktree)


def passing(verdicts: list[dict[str, Any]], fp: str, key: bytes | None, tree: str) -> dict[str, Any] | None:
    """The newest passing verdict of `tree` with fingerprint `fp` whose MAC verifies (usually one HMAC:
    an unauthenticated line is skipped, not trusted)."""
    for v in reversed(verdicts):
        if v.get("fingerprint") == fp and v.get("result") == "passed" and verdictkey.verifies(key, tree, v):
            return dict(v)
    return None


def _failed_before(verdicts: list[dict[str, Any]], fp: str, key: bytes | None, tree: str) -> bool:
    return any(v.get("fingerprint") == fp and v.get("result") == "failed" and verdictkey.verifies(key, tree, v) for v in verdicts)


Place = Callable[[str], Path]  # commit -> the clean checkout of it to run the gate in (ops/shared/gatetree.py)


def run_configured(store: Store, gate: str, cfg: GatesConfig, worktree: Path, logs_dir: Path, env: dict[str, str] | None = None,
                   rerun: bool = False, *, ticker: Ticker | None = None, place: Place | None = None) -> GateEvidence:
    """gates.build or gates.final (`gate`) as configured: its command, the timeout, its reports."""
    command = {"build": cfg.build, "final": cfg.final}[gate]
    return run_or_reuse(store, gate, command, worktree, logs_dir, cfg.timeout_s, env, rerun, ticker=ticker, reports=cfg.reports_for(gate),
                        place=place)


def run_or_reuse(store: Store, gate: str, command: Command, worktree: Path, logs_dir: Path, timeout_s: float,
                 env: dict[str, str] | None = None, rerun: bool = False, *, ticker: Ticker | None = None,
                 reports: ReportSpec | None = None, place: Place | None = None) -> GateEvidence:
    """The one way to run a command gate: reuse a passing verdict of the worktree's HEAD tree, or run
    the gate and record its verdict. `place`: the clean checkout of that commit it runs in, made only
    when it runs (None: `worktree` is one already, a queue's fresh scratch worktree). `rerun`: run even
    if a verdict passed. The caller records the evidence (gates.evidence.record), which also logs a
    flaky tree in the audit trail. `reports`: the gate's JUnit/coverage files and thresholds; a reused
    verdict carries what its run parsed."""
    if not command:  # no gate configured: nothing ran, nothing to record on a tree
        return gate_command.run(gate, command, worktree, logs_dir, timeout_s, env)
    commit, tree = Git(worktree).head_and_tree() or ("", "")
    fp = fingerprint(command, timeout_s, env, reports, worktree)
    layout = store.layout
    key = verdictkey.load_key(layout.repo.common_dir, [layout.main_worktree, layout.repo.common_dir, layout.tasks_root, worktree])
    earlier = store.verdicts(tree) if tree else []
    prior = None if rerun else passing(earlier, fp, key, tree)
    if prior is not None:
        return GateEvidence(
            gate=gate, command=command, ran=False, passed=True, exit_code=prior.get("exit_code", 0), tree=tree, commit=commit,
            worktree=str(worktree), log_path=prior.get("log_path"), time=now(), tests=prior.get("tests"), fingerprint=fp,
            reused_from=str(prior.get("run") or prior.get("log_path")),
            reports=GateReports.model_validate(prior["reports"]) if prior.get("reports") else None,
        )
    if place is not None:
        worktree = place(commit)
        env = {**(clean_env() if env is None else env), "SPARK_WORKTREE": str(worktree)}
    box = confine.for_worktree(store.layout, worktree, clean_env() if env is None else env)
    # `place` checked out exactly `commit`, and the box pins its HEAD: no need to read them again
    ev = gate_command.run(gate, command, worktree, logs_dir, timeout_s, env, ticker=ticker, reports=reports, sandbox=box,
                          at=(commit, tree) if tree else None)
    ev.fingerprint = fp
    ev.flaky = ev.passed and _failed_before(earlier, fp, key, tree)
    if ev.tree:
        store.add_verdict(ev.tree, verdictkey.sign(key, ev.tree, {**_verdict(ev, _where(env, worktree)), "sandboxed": box is not None}))
    return ev


def _verdict(ev: GateEvidence, where: str) -> dict[str, Any]:
    run = f"{ev.gate} gate of {where} at {ev.time}"
    v = {
        "fingerprint": ev.fingerprint, "gate": ev.gate, "command": ev.command, "result": "passed" if ev.passed else "failed",
        "exit_code": ev.exit_code, "timed_out": ev.timed_out, "duration_s": ev.duration_s, "log_path": ev.log_path, "time": ev.time,
        "worktree": ev.worktree, "commit": ev.commit, "where": where, "run": run, "tests": ev.tests, "flaky": ev.flaky,
    }
    if ev.reports is not None:
        v["reports"] = ev.reports.model_dump(mode="json")
    return v


def describe(ev: GateEvidence) -> str:
    """`reused verdict of <tree> from <run>`, for evidence that reused one."""
    return f"reused verdict of {ev.tree[:12]} from {ev.reused_from}"
