"""Doctor's check of `agent run` records: a run whose runner is gone (a crash, a kill -9) left its
record behind; its client was killed with it (core/proc.py's watchdog), so the record is all that is left."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from spark_git.ops.ending.doctor.scan import Ctx, Finding
from spark_git.ops.shared import agentruns as agent_run


def check_runs(ctx: Ctx, task: str) -> None:
    for r in agent_run.left_behind(ctx.layout, task):
        ctx.add(Finding(where=task, kind="agent-run-left-behind",
                        problem=f"agent {r['agent']}'s {r['client']} run (pid {r['pid']}) ended without finishing: its runner is gone",
                        repair=f"--fix: remove {r['file']}; then `spark-git agent run {task} {r['agent']}` again", details=r),
                _remove(Path(str(r["file"]))), task)


def _remove(path: Path) -> Callable[[], None]:
    def fix() -> None:
        path.unlink(missing_ok=True)
    return fix
