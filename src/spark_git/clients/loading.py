"""Will the agents' client sessions load spark-git's hooks? Warnings for `start` and `status`: hooks
installed in the main worktree's project settings but not committed (new worktrees are checked out
from the branch, so they do not get the file), or configured while `spark-git` is not on the PATH
the client runs hooks with (the hook then fails; with onFailure=block every tool call is refused)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from spark_git.clients.claude import SCOPES, is_ours


def _has_ours(settings: Path) -> bool:
    try:
        data = json.loads(settings.read_text())
    except (OSError, ValueError):
        return False
    hooks = data.get("hooks") if isinstance(data, dict) else None
    groups = hooks.get("PreToolUse") if isinstance(hooks, dict) else None
    return isinstance(groups, list) and any(
        isinstance(g, dict) and any(isinstance(h, dict) and is_ours(h.get("command")) for h in g.get("hooks") or []) for g in groups
    )


def _loads(worktree: Path) -> bool:
    return any(_has_ours(worktree / ".claude" / name) for name in SCOPES.values())


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
