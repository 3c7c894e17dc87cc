"""`hook worktree-create` for an agent's subagent (`isolation: worktree`) answers only once the agent's
Claude Code has the new worktree's sandbox grant in force (issue 22).

The subagent runs in its parent's session, under the parent's sandbox. Claude Code 2.1.328 builds that
sandbox at start and again only when asked (its settings watcher, /add-dir, or a subagent worktree
under `<main worktree>/.claude/worktrees`, the one place it grants by itself), and wraps each command
with the config in force when it starts, for its whole life. The grant spark-git writes into the
parent's settings (clients/claude/owned.py) is taken up by the watcher (chokidar, awaitWriteFinish:
the file unchanged for 1000 ms, polled every 500 ms), 1-1.5 s after the write: a subagent command
started sooner stayed read-only. So the hook waits. The rebuild reads the `.git` file of each worktree
the settings name (to find the admin dir it keeps writable) inside the same synchronous step that
installs the new config: once that read is seen (clients/reload.py), the config is in force before
Claude Code can act on the hook's answer. The parent's settings mtime is bumped after the watch is
set, so a rebuild that came before cannot be missed (the watcher waits out a new second)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from spark_git.clients import reload
from spark_git.clients.claude import owned as sandboxes
from spark_git.clients.claude import sandbox
from spark_git.core.layout import Layout
from spark_git.state.store import Store

TIMEOUT = 20.0  # seconds without any sign of a reload; Claude Code gives the hook 600
GRACE = 2.0  # seconds after Claude Code re-read the settings, for the rebuild to read the worktree's .git


def settle(layout: Layout, store: Store, worktree: Path, timeout: float = TIMEOUT) -> str | None:
    """Waits for the Claude Code session whose sandbox grants `worktree` (a subagent's) to take the grant
    up; a note when it did not within `timeout`, None when it did or nothing grants it."""
    real = Path(os.path.realpath(worktree))
    parent = next((b for b in sandboxes.boxes(layout, store) if any(os.path.realpath(w) == str(real) for w, _ in b.more)), None)
    settings = parent.worktree / sandbox.FILE if parent is not None else None
    if settings is None or not _granted(settings, str(real)):
        return None
    w = reload.watch([real / ".git", settings])
    if w is None:
        return f"cannot tell when Claude Code takes up the sandbox grant of {worktree} here (no inotify); its first commands may find it read-only"
    with w:
        os.utime(settings)  # a change seen only after the watch exists
        if _rebuilt(w, real / ".git", settings, timeout):
            return None
    return (f"Claude Code did not take up the sandbox grant of {worktree} within {timeout:.0f} s (its settings watcher); "
            "the subagent's commands may find it read-only until it does")


def _granted(settings: Path, real: str) -> bool:
    """The parent's settings name the worktree among its directories, the list Claude Code finds the
    admin dirs it keeps writable from (read before the watch exists: this read is not Claude Code's)."""
    try:
        data = json.loads(settings.read_text())
    except (OSError, ValueError):
        return False
    perms = data.get("permissions") if isinstance(data, dict) else None
    dirs = perms.get("additionalDirectories") if isinstance(perms, dict) else None
    return isinstance(dirs, list) and real in dirs


def _rebuilt(w: reload.Watch, dotgit: Path, settings: Path, timeout: float, grace: float = GRACE) -> bool:
    """The sandbox rebuild read `dotgit`; or, once the settings were re-read, `grace` passed without that
    read (a Claude Code that builds its sandbox without reading it: nothing more to wait for)."""
    end, reread = time.monotonic() + timeout, False
    while (left := end - time.monotonic()) > 0:
        seen = w.next_read(min(left, grace) if reread else left)
        if seen == dotgit:
            return True
        if seen is None:
            return reread
        reread = reread or seen == settings
    return False
