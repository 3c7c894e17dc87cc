"""Which sandbox a command gate runs in (core/gatebox.py): its worktree writable, the rest of the
repository read-only, and with it the repository's local-path remotes (a gate must not push to
them) and the user's git config (a `core.hooksPath` written there would run in spark-git's own git
commands); the verdict key hidden. None when bubblewrap is missing: the gate then runs unsandboxed,
as `status` and `hooks check` say."""

from __future__ import annotations

import os
from pathlib import Path

from spark_git.core import gatebox
from spark_git.core.git import Git
from spark_git.core.layout import Layout
from spark_git.gates import verdictkey


def _local_remotes(git: Git) -> list[Path]:
    """Every remote URL of the repository that is a directory on this machine (path or file://)."""
    r = git.run("config", "--get-regexp", r"^remote\..*\.(push)?url$", check=False)
    out = []
    for line in r.lines:
        url = line.partition(" ")[2]
        path = url[len("file://"):] if url.startswith("file://") else url
        if os.path.isabs(path) and os.path.isdir(path):
            out.append(Path(path))
    return out


def _user_git_config() -> list[Path]:
    home = Path(os.path.expanduser("~"))
    xdg = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    return [home / ".gitconfig", xdg / "git"]


def for_worktree(layout: Layout, worktree: Path) -> gatebox.Sandbox | None:
    program = gatebox.bwrap()
    if program is None:
        return None
    admin = Path(Git(worktree).discover().git_dir)
    repo = [layout.main_worktree, layout.repo.common_dir, layout.tasks_root, *_local_remotes(layout.git()), *_user_git_config()]
    return gatebox.for_gate(program, worktree, admin, repo, [verdictkey.state_dir()])
