"""Merge gates: clean tree, attribution, and command gates (timeout kills the whole process group,
output streamed to `<task>/logs/<UTC time>-<gate>.log`, evidence returned as a model)."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import time
from datetime import datetime, timezone
from pathlib import Path

from pydantic import BaseModel

from spark_git.core import faults
from spark_git.core.config import Command
from spark_git.core.errors import Blocked
from spark_git.core.git import Git, clean_env
from spark_git.state.models import now


class GateEvidence(BaseModel):
    gate: str  # "build" or "final"
    command: list[str] | str | None  # None: no gate configured, nothing ran
    ran: bool
    passed: bool
    exit_code: int | None = None
    timed_out: bool = False
    duration_s: float = 0.0
    tree: str
    commit: str
    worktree: str
    log_path: str | None = None
    time: str
    tests: dict[str, int] | None = None  # pytest counts, when the command is pytest
    error: str | None = None


def check_clean(git: Git, what: str, task: str | None = None, dirty: list | None = None) -> None:
    """Blocked, listing the files, unless the worktree has no modified, staged or untracked files.
    `dirty`: the worktree's status when the caller already has it."""
    dirty = git.status() if dirty is None else dirty
    if dirty:
        raise Blocked(
            f"{what} is not clean: {len(dirty)} modified, staged or untracked file(s)",
            hint="commit or remove them first (untracked files count; ignored ones do not)",
            details={"worktree": str(git.cwd), "files": [str(d) for d in dirty]},
            task=task,
        )


# -- command gates -----------------------------------------------------------------------------


def argv_of(command: Command) -> list[str]:
    if isinstance(command, list):
        return list(command)
    return ["/bin/sh", "-c", str(command)]


def is_pytest(command: Command) -> bool:
    words = command if isinstance(command, list) else shlex.split(str(command), posix=True) if command else []
    return any(Path(w).name in ("pytest", "py.test") or w == "pytest" for w in words)


_COUNT_RE = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?)")


def pytest_counts(output: str) -> dict[str, int] | None:
    """Counts from pytest's last summary line (`== 3 passed, 1 failed in 0.1s ==`)."""
    for line in reversed(output.splitlines()):
        if re.search(r"\b(passed|failed|error|errors|no tests ran)\b", line) and (" in " in line or line.startswith("=")):
            counts: dict[str, int] = {}
            for n, key in _COUNT_RE.findall(line):
                key = {"error": "errors", "warning": "warnings"}.get(key, key)
                counts[key] = counts.get(key, 0) + int(n)
            return counts
    return None


def log_path(logs_dir: Path, gate: str) -> Path:
    logs_dir.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")
    return logs_dir / f"{stamp}-{gate}.log"


def _die_with_parent() -> None:
    # Linux: the gate's shell dies if spark-git is SIGKILLed, so a killed merge leaves no gate behind.
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:  # pragma: no cover - not Linux
        pass


def run(gate: str, command: Command, worktree: Path, logs_dir: Path, timeout_s: float, env: dict[str, str] | None = None) -> GateEvidence:
    """Runs `command` in `worktree`. Never raises for the command's own failure: the evidence says.
    `env`: the worktree's environment (envs.for_worktree: SPARK_*, no inherited GIT_DIR...)."""
    git = Git(worktree)
    commit, tree = git.head_and_tree() or ("", "")
    started = now()
    if not command:
        return GateEvidence(gate=gate, command=None, ran=False, passed=True, tree=tree, commit=commit, worktree=str(worktree), time=started)
    path = log_path(logs_dir, gate)
    argv = argv_of(command)
    t0 = time.monotonic()
    exit_code: int | None = None
    timed_out = False
    error = None
    with open(path, "wb") as log:
        log.write(f"$ {command if isinstance(command, str) else shlex.join(command)}\n# in {worktree} at {started}, commit {commit}, tree {tree}\n".encode())
        log.flush()
        try:
            proc = subprocess.Popen(
                argv, cwd=worktree, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                env=env if env is not None else clean_env(), start_new_session=True, preexec_fn=_die_with_parent,
            )
        except OSError as e:  # command not found, not executable
            error = f"cannot run {argv[0]!r}: {e.strerror or e}"
            exit_code = 127
            log.write(f"spark-git: {error}\n".encode())
        else:
            watchdog = _watchdog(proc.pid)
            faults.point(f"gate-{gate}-running")
            try:
                exit_code = proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                timed_out = True
                _kill_group(proc)
                exit_code = proc.returncode
                error = f"timed out after {timeout_s:g}s; its process group was killed"
                log.write(f"\nspark-git: {error}\n".encode())
            finally:
                if proc.returncode is None:  # interrupted (Ctrl-C): leave nothing running
                    _kill_group(proc)
            # Whatever the gate started in its group must not outlive it.
            _kill_group(proc, quiet=True)
            if watchdog is not None:  # its job is done: stop it before it could signal a reused group id
                watchdog.kill()
                watchdog.wait()
    duration = round(time.monotonic() - t0, 3)
    tests = None
    if is_pytest(command):
        tests = pytest_counts(path.read_text(errors="replace"))
    passed = exit_code == 0 and not timed_out
    if exit_code == 127 and not error:
        error = "command not found (exit 127)"
    return GateEvidence(
        gate=gate, command=command, ran=True, passed=passed, exit_code=exit_code, timed_out=timed_out, duration_s=duration,
        tree=tree, commit=commit, worktree=str(worktree), log_path=str(path), time=started, tests=tests, error=error,
    )


def _watchdog(pgid: int) -> subprocess.Popen | None:
    """Kills the gate's process group if spark-git dies, SIGKILL included: PDEATHSIG only reaches the
    gate's first process, not what it started. The watchdog waits for EOF on a pipe that only this
    process holds open; the kernel closes it whenever we go away."""
    try:
        # `kill -9 -PGID`: dash's kill takes neither `--` nor `-s KILL` before a negative id
        return subprocess.Popen(["/bin/sh", "-c", f"read _; kill -9 -{pgid} 2>/dev/null"], stdin=subprocess.PIPE,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    except OSError:  # no /bin/sh: PDEATHSIG still covers the gate itself
        return None


def _kill_group(proc: subprocess.Popen, quiet: bool = False) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if proc.returncode is None:
        proc.wait()
