"""Doctor's check of `agent run` records whose process is gone: a tmux window whose client ended (its
shell wrote the exit code), or a run whose runner a crash or a kill -9 took (its client was killed
with it: core/proc.py's watchdog). `--fix` records how it ended, so status tells that, not the start."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from spark_git.core.caller import agent_session
from spark_git.ops.ending.doctor.scan import Ctx, Finding
from spark_git.ops.shared import agentruns as agent_run


def check_runs(ctx: Ctx, task: str) -> None:
    for r in agent_run.left_behind(ctx.layout, task):
        ctx.add(Finding(where=task, kind="agent-run-left-behind",
                        problem=f"agent {r['agent']}'s {r['client']} run (pid {r['pid']}) ended unrecorded: {r['ended']}",
                        repair=f"--fix: record how it ended and remove {r['file']}; then `spark-git agent run {task} {r['agent']}` again", details=r),
                _settle(ctx, r), task)


def _settle(ctx: Ctx, r: dict[str, Any]) -> Callable[[], None]:
    """The run's end in the audit trail (status then tells it), then its record gone."""
    def fix() -> None:
        ctx.store.event(str(r["task"]), "agent_run", session=agent_session(str(r["task"]), str(r["agent"])), agent=r["agent"], client=r["client"],
                        mode=r["mode"], outcome="ended" if r["mode"] == "tmux" else "failed", ended=r["ended"], exit_code=r["exit_code"],
                        settled_by="doctor --fix")
        path = Path(str(r["file"]))
        (path.parent / agent_run.EXIT_FILE).unlink(missing_ok=True)
        path.unlink(missing_ok=True)
    return fix
