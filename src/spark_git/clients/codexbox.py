"""Codex CLI's own sandbox for agent sessions (issue 22): a `.codex/config.toml` in each agent worktree
(Codex reads a linked worktree's own config.toml, while its hooks come from the main checkout) that
puts Codex in `workspace-write` mode: a session may write its cwd — the agent worktree — and, for git
to commit there, the object store, the worktree's admin directory and `refs/heads` with its logs
(a ref is written through a lock file next to it, so the directory must be writable: the kernel
cannot tell the agent's branch from another; spark-git's hook does). Everything else is read-only
in the kernel, which holds even for a command the hook cannot read (`… | base64 -d | sh`).
Codex keeps `.git` and `.codex` inside a writable root read-only itself.

The file is kept out of git by one line in the common `info/exclude`, and is only ever written or
removed while it is spark-git's (its first line says so)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from spark_git.clients import originals
from spark_git.state.files import write_text_atomic

FILE = Path(".codex", "config.toml")
MARK = "# spark-git: Codex's sandbox for this agent worktree (`spark-git hooks install --client codex`); regenerated, do not edit"
EXCLUDE_NOTE = "# spark-git: agents' Codex sandbox settings (`spark-git hooks install --client codex`; kept out of git)"
EXCLUDE_LINE = "/.codex/config.toml"

def _temp_dirs() -> list[Path]:
    """What Codex's workspace-write also opens unless told not to: /tmp and $TMPDIR."""
    return [Path(os.path.realpath(d)) for d in ("/tmp", os.environ.get("TMPDIR")) if d]


def admin_dir(worktree: Path) -> Path | None:
    """A linked worktree's own directory under `<common>/worktrees/` (its `.git` file names it)."""
    try:
        line = (worktree / ".git").read_text().strip()
    except OSError:
        return None
    if not line.startswith("gitdir:"):
        return None
    p = Path(line.partition(":")[2].strip())
    return Path(os.path.realpath(p if p.is_absolute() else worktree / p))


def wanted(worktree: Path, common_dir: Path) -> str:
    common = Path(os.path.realpath(common_dir))
    roots = [common / "objects", common / "refs" / "heads", common / "logs" / "refs" / "heads"]
    admin = admin_dir(worktree)
    if admin is not None:
        roots.insert(1, admin)
    under_tmp = any(common.is_relative_to(t) or Path(os.path.realpath(worktree)).is_relative_to(t) for t in _temp_dirs())
    lines = [MARK, 'sandbox_mode = "workspace-write"', "", "[sandbox_workspace_write]",
             "writable_roots = [" + ", ".join(json.dumps(str(r)) for r in roots) + "]",
             "network_access = false",
             # a repository under /tmp or $TMPDIR would be writable as a temp dir: those are shut then
             f"exclude_slash_tmp = {'true' if under_tmp else 'false'}", f"exclude_tmpdir_env_var = {'true' if under_tmp else 'false'}"]
    return "\n".join(lines) + "\n"


def ours(worktree: Path) -> bool:
    text = originals.read_exact(worktree / FILE)
    return text is not None and text.startswith(MARK)


def present(worktree: Path, common_dir: Path) -> bool:
    return originals.read_exact(worktree / FILE) == wanted(worktree, common_dir)


def apply(worktree: Path, common_dir: Path) -> bool:
    """Written when absent or spark-git's (a config of the user's is left alone: False)."""
    path = worktree / FILE
    if (path.exists() and not ours(worktree)) or present(worktree, common_dir):
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, wanted(worktree, common_dir))
    return True


def remove(worktree: Path) -> bool:
    if not ours(worktree):
        return False
    (worktree / FILE).unlink()
    try:
        (worktree / FILE.parent).rmdir()  # only when it held nothing else
    except OSError:
        pass
    return True


def exclude(common_dir: Path) -> bool:
    path = common_dir / "info" / "exclude"
    text = originals.read_exact(path) or ""
    if EXCLUDE_LINE in text.splitlines():
        return False
    sep = "" if not text or text.endswith("\n") else "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, f"{text}{sep}{EXCLUDE_NOTE}\n{EXCLUDE_LINE}\n")
    return True
