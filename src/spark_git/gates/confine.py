"""Which box a command gate runs in (core/gatebox.py `for_gate`): the whole file system read-only,
writable only the clean checkout it gates, a private /tmp, /run and HOME, its own PID, IPC, UTS and
(unless `[gates] network`) network namespaces, the environment an allow-list, the verdict key's
directory hidden. None when bubblewrap is missing: the gate then runs unsandboxed, as `status` and
`hooks check` say."""

from __future__ import annotations

from pathlib import Path

from spark_git.core import gatebox
from spark_git.core.git import Git
from spark_git.core.layout import Layout
from spark_git.gates import verdictkey


def for_worktree(layout: Layout, worktree: Path, env: dict[str, str]) -> gatebox.Sandbox | None:
    """The gate's box for a run in `worktree` (a clean checkout) with `env` (before its allow-list)."""
    program = gatebox.bwrap()
    if program is None:
        return None
    admin = Git(worktree).admin_dir()
    shown = [layout.main_worktree, layout.repo.common_dir, layout.tasks_root]
    cfg = layout.config.gates
    return gatebox.for_gate(program, worktree, admin, shown, [verdictkey.state_dir()], env, network=cfg.network, env_extra=tuple(cfg.env))
