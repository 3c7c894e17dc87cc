"""Work in flight (a gate running, a merge under way): a small record beside the task's logs while it
runs, removed when it ends. Views only read them (status, watch); a record whose process is gone
(SIGKILL, a crash) is not shown, and the next one of its kind in that directory removes it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from spark_git.core.errors import CorruptState
from spark_git.core.model import Model
from spark_git.core.proc import pid_alive
from spark_git.state import files
from spark_git.state.models import now

SUFFIX = ".running"


class InFlight(Model):
    kind: str  # gate | merge
    name: str  # the gate (build, final), or the agent being merged
    started_at: str
    pid: int
    worktree: str | None = None
    commit: str | None = None
    log: str | None = None  # the log it writes now (a gate's)


@contextmanager
def marked(logs_dir: Path, stem: str, kind: str, name: str, **facts: str | None) -> Iterator[None]:
    """`<logs_dir>/<stem>.running` for as long as the block runs."""
    path = logs_dir / f"{stem}{SUFFIX}"
    _sweep(logs_dir)
    files.write_atomic(path, InFlight(kind=kind, name=name, started_at=now(), pid=os.getpid(), **facts))
    try:
        yield
    finally:
        path.unlink(missing_ok=True)


def live(logs_dir: Path) -> list[InFlight]:
    """What runs now for this task, oldest first."""
    return [rec for _, rec in _records(logs_dir) if pid_alive(rec.pid)]


def _records(logs_dir: Path) -> Iterator[tuple[Path, InFlight]]:
    for p in sorted(logs_dir.glob(f"*{SUFFIX}")) if logs_dir.is_dir() else []:
        try:
            yield p, files.read_model(p, InFlight)
        except (CorruptState, OSError):  # half-written by a killed process, or removed as we read
            continue


def _sweep(logs_dir: Path) -> None:
    for p, rec in list(_records(logs_dir)):
        if not pid_alive(rec.pid):
            p.unlink(missing_ok=True)
