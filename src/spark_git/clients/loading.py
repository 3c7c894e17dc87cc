"""Will the agents' client sessions load spark-git's hooks? Warnings for `start` and `status`: hooks
installed in the main worktree's project settings but not committed (new worktrees are checked out
from the branch, so they do not get the file), or configured while `spark-git` is not on the PATH
the client runs hooks with (the hook then fails; with onFailure=block every tool call is refused)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from spark_git.clients.claude import CLAUDE
from spark_git.clients.jsonhooks import has


def _has_ours(settings: Path) -> bool:
    try:
        data = json.loads(settings.read_text())
    except (OSError, ValueError):
        return False
    return has(data.get("hooks") if isinstance(data, dict) else None, "PreToolUse")


def _loads(worktree: Path) -> bool:
    files = CLAUDE.settings_files()
    return any(_has_ours(worktree / files[scope]) for scope in ("project", "local"))


def hook_warnings(main: Path, worktrees: list[Path]) -> list[str]:
    """One line per problem; [] when the hooks are not configured anywhere (nothing was asked for)."""
    user = Path(os.path.expanduser("~")) / ".claude" / "settings.json"
    if not (_loads(main) or _has_ours(user) or any(_loads(w) for w in worktrees if w.is_dir())):
        return []
    out: list[str] = []
    if shutil.which("spark-git") is None:
        out.append("spark-git hooks are configured but `spark-git` is not on PATH: every hook call will fail "
                   "(and block); install spark-git where Claude Code can run it")
    if _has_ours(user):
        return out
    missing = [str(w) for w in worktrees if w.is_dir() and not _loads(w)]
    if missing:
        out.append(f"{len(missing)} worktree(s) will not load spark-git's hooks ({', '.join(missing[:3])}"
                   f"{', …' if len(missing) > 3 else ''}): .claude/settings.json with the hooks is not committed on the base branch; "
                   "commit it (then `spark-git update`) or run `spark-git hooks install --scope local` before creating worktrees")
    return out
