"""Which sandbox a command gate runs in (core/gatebox.py): its worktree writable, the rest of the
repository read-only, the verdict key hidden. None when bubblewrap is missing: the gate then runs
unsandboxed, as `status` and `hooks check` say."""

from __future__ import annotations

from pathlib import Path

from spark_git.core import gatebox
from spark_git.core.git import Git
from spark_git.core.layout import Layout
from spark_git.gates import verdictkey


def for_worktree(layout: Layout, worktree: Path) -> gatebox.Sandbox | None:
    program = gatebox.bwrap()
    if program is None:
        return None
    admin = Path(Git(worktree).discover().git_dir)
    repo = [layout.main_worktree, layout.repo.common_dir, layout.tasks_root]
    return gatebox.for_gate(program, worktree, admin, repo, [verdictkey.state_dir()])
