"""The command gates (gates.build, gates.final): run through `core.proc` (process group killed at the
timeout, nothing left running), output streamed to `<task>/logs/<UTC time>-<gate>.log`, evidence
returned as a model; pytest's counts are read from its summary line. Callers run them through
gates.verdicts.run_configured, which reuses a passing verdict of the tree."""

from __future__ import annotations

import re
import shlex
from datetime import UTC, datetime
from pathlib import Path

from spark_git.core import faults, proc
from spark_git.core.config import Command, ReportSpec
from spark_git.core.gatebox import Sandbox
from spark_git.core.git import Git
from spark_git.core.proc import argv_of
from spark_git.gates import reports as gate_reports
from spark_git.gates.clean import check_clean
from spark_git.gates.evidence import GateEvidence
from spark_git.gates.reports import GateReports
from spark_git.state import inflight
from spark_git.state.models import now

# GateEvidence and check_clean live beside this module; callers still reach them here.
__all__ = ["GateEvidence", "argv_of", "check_clean", "failed_tests", "is_pytest", "log_path", "log_tail", "pytest_counts", "run"]


def is_pytest(command: Command) -> bool:
    words = command if isinstance(command, list) else shlex.split(str(command), posix=True) if command else []
    return any(Path(w).name in ("pytest", "py.test") or w == "pytest" for w in words)


_COUNT_RE = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?)")


def pytest_counts(output: str) -> dict[str, int] | None:
    """Counts from pytest's last summary line (`== 3 passed, 1 failed in 0.1s ==`)."""
    for line in reversed(output.splitlines()):
        if re.search(r"\b(passed|failed|error|errors|deselected|no tests ran)\b", line) and (" in " in line or line.startswith("=")):
            counts: dict[str, int] = {}
            for n, key in _COUNT_RE.findall(line):
                key = {"error": "errors", "warning": "warnings"}.get(key, key)
                counts[key] = counts.get(key, 0) + int(n)
            return counts
    return None


_FAILED_RE = re.compile(r"^(?:FAILED|ERROR) (\S+\.py(?:::\S+)?)")


def failed_tests(output: str) -> list[str]:
    """The node ids of pytest's `FAILED tests/x.py::name - ...` (and `ERROR ...`) summary lines."""
    seen: dict[str, None] = {}
    for line in output.splitlines():
        m = _FAILED_RE.match(line.strip())
        if m:
            seen.setdefault(m.group(1))
    return list(seen)


def log_tail(path: str | Path | None, lines: int = 20) -> list[str]:
    """The last `lines` lines of a gate log ([] if it cannot be read)."""
    if not path:
        return []
    try:
        with open(path, "rb") as f:
            start = f.seek(max(0, f.seek(0, 2) - 64 * 1024))  # the end is enough, however long the log
            text = f.read().decode(errors="replace")
    except OSError:
        return []
    out = text.splitlines()
    return out[HEADER_LINES if start == 0 else 0:][-lines:]  # our own header (`$ command`, `# in ...`) is not the gate's output


HEADER_LINES = 2  # what `run` writes at the top of every log, before the gate's own output


def log_path(logs_dir: Path, gate: str) -> Path:
    logs_dir.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
    return logs_dir / f"{stamp}-{gate}.log"


def run(gate: str, command: Command, worktree: Path, logs_dir: Path, timeout_s: float, env: dict[str, str] | None = None,
        ticker: proc.Ticker | None = None, reports: ReportSpec | None = None, sandbox: Sandbox | None = None,
        at: tuple[str, str] | None = None) -> GateEvidence:
    """Runs `command` in `worktree`. Never raises for the command's own failure: the evidence says.
    `env`: the worktree's environment (envs.for_worktree: SPARK_*, no inherited GIT_DIR...).
    `ticker`: shows elapsed time and the log's last line while it runs (a terminal only).
    `reports`: the JUnit/coverage files it writes and the thresholds on them (gates/reports.py): a
    command that exits 0 but misses one fails. `sandbox`: run inside bwrap (core/gatebox.py). `at`: the
    worktree's (commit, tree) when the caller has just read or checked them out (one git process less).
    Callers go through gates.verdicts (run_configured), which records the verdict of the tree."""
    commit, tree = at or Git(worktree).head_and_tree() or ("", "")
    started = now()
    if not command:
        return GateEvidence(gate=gate, command=None, ran=False, passed=True, tree=tree, commit=commit, worktree=str(worktree), time=started)
    path = log_path(logs_dir, gate)
    before = gate_reports.stamps(worktree, reports)
    with inflight.marked(logs_dir, path.stem, "gate", gate, worktree=str(worktree), commit=commit, log=str(path)), open(path, "wb") as log:
        log.write(f"$ {command if isinstance(command, str) else shlex.join(command)}\n# in {worktree} at {started}, commit {commit}, tree {tree}\n".encode())
        log.flush()
        with proc.ticking(path, ticker):
            res = proc.run(argv_of(command), worktree, log, timeout_s, env=env, started=lambda: faults.point(f"gate-{gate}-running"),
                           sandbox=sandbox)
        error = res.error
        if error:
            log.write(f"spark-git: {error}\n".encode())
        elif res.timed_out:
            error = f"timed out after {timeout_s:g}s; its process group was killed"
            log.write(f"\nspark-git: {error}\n".encode())
    output = path.read_text(errors="replace") if is_pytest(command) else ""
    tests = pytest_counts(output) if output else None
    if res.exit_code == 127:  # by the shell, or we could not start it: either way, not there
        error = f"command not found in {worktree} (exit 127)" + (f": {error}" if error else "")
    parsed, passed, error = _judge(path, worktree, reports, before, tests, res.exit_code == 0 and not res.timed_out, error)
    names = failed_tests(output) if res.exit_code else []
    return GateEvidence(
        gate=gate, command=command, ran=True, passed=passed, exit_code=res.exit_code,
        timed_out=res.timed_out, duration_s=res.duration_s, tree=tree, commit=commit, worktree=str(worktree),
        log_path=str(path), time=started, tests=tests, error=error,
        failed_tests=names or (parsed.tests.failed_tests if parsed and parsed.tests else []), reports=parsed,
    )


def _judge(log: Path, worktree: Path, spec: ReportSpec | None, before: dict[str, gate_reports.Stamp], tests: dict[str, int] | None,
           passed: bool, error: str | None) -> tuple[GateReports | None, bool, str | None]:
    """The reports a run wrote, read after it: a threshold missed fails a gate whose command passed
    (its error then names each), and every miss is appended to the gate's log."""
    if spec is None:
        return None, passed, error
    parsed = gate_reports.collect(worktree, spec, before, tests)
    if parsed.unmet:
        with open(log, "a") as f:
            f.write("".join(f"spark-git: {u}\n" for u in parsed.unmet))
        if passed:
            return parsed, False, "; ".join(parsed.unmet)
    return parsed, passed, error
