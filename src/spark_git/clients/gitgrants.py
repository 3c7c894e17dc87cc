"""What git may write from inside Claude Code's sandbox for one agent worktree (clients/claude/sandbox.py).

Claude Code 2.1.328 makes a linked worktree's whole git common dir writable for sandboxed commands
(only `config`, `hooks` and a few pins stay read-only), and its mounts are per directory: a ref is
moved by creating `<ref>.lock` beside it and renaming, so the agent's own branch needs `refs/heads`
writable. spark-git therefore names, for `denyWrite`, every path of the common dir that EXISTS now
and that the agent's commit, rebase or switch does not need: the other top-level entries (main's
HEAD and index, packed-refs, info, spark-git's state…), the other worktrees' admin dirs, every ref
directory but `refs/heads`, every branch but its own, and their reflogs. Only existing paths: for a
missing one Claude Code mounts /dev/null, creating an empty file on the host while a command runs
(a broken ref for everyone). New names can still be created; docs/hooks.md says what that leaves.

Standard library only: the sandbox settings are written from `start` and `agent add`."""

from __future__ import annotations

import os
from pathlib import Path

from spark_git.core.paths import linked_admin

# Kept writable: git's commit, rebase and switch write objects and their own admin dir; refs and logs
# are walked into (their own branch kept, the rest denied). Transient files git creates and deletes
# in the common dir (ORIG_HEAD, FETCH_HEAD…) are not named: a deny on a file that goes away is worse.
WALKED = ("objects", "refs", "logs", "worktrees")
TRANSIENT = ("ORIG_HEAD", "FETCH_HEAD", "COMMIT_EDITMSG", "AUTO_MERGE", "MERGE_HEAD", "MERGE_MSG", "MERGE_MODE", "gc.pid", "gc.log")


# Made when absent, so that they exist to be denied: the ref namespaces git and spark-git read for
# everybody (a new refs/replace/X changes what every worktree sees for a commit) and packed-refs (an
# agent's own packed-refs could name refs, or break every git command). Empty, they change nothing.
PREPARED_DIRS = ("refs/spark", "refs/notes", "refs/replace", "refs/tags", "refs/remotes")
PREPARED_FILES = ("packed-refs",)


def prepare(common: Path) -> None:
    for d in PREPARED_DIRS:
        (common / d).mkdir(parents=True, exist_ok=True)
    for f in PREPARED_FILES:
        try:
            os.close(os.open(common / f, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
        except FileExistsError:
            pass


def git_dirs(worktree: Path) -> tuple[Path, Path] | None:
    """(the worktree's admin dir, the common dir) from its `.git` file; None for a main worktree."""
    admin = linked_admin(worktree)
    if admin is None:
        return None
    try:
        common = Path(os.path.realpath(admin / (admin / "commondir").read_text().strip()))
    except OSError:
        return None
    return admin, common


def own_branch(admin: Path) -> str | None:
    try:
        head = (admin / "HEAD").read_text().strip()
    except OSError:
        return None
    return head[len("ref: refs/heads/"):] if head.startswith("ref: refs/heads/") else None


def grants(worktrees: list[tuple[Path, str | None]]) -> tuple[list[str], list[str]]:
    """(allowWrite, denyWrite) as absolute paths for git run by a session that owns `worktrees`
    (its own, and its subagents'), each with its branch (None: the one checked out)."""
    allow: list[str] = []
    keep_admin: set[Path] = set()
    keep_refs: set[str] = set()
    common: Path | None = None
    for wt, branch in worktrees:
        dirs = git_dirs(wt)
        if dirs is None:
            continue
        admin, common = dirs
        branch = branch or own_branch(admin)
        keep_admin.add(admin)
        allow += [str(common / "objects"), str(admin), str(common / "refs" / "heads")]
        if branch:
            keep_refs.add(f"refs/heads/{branch}")
            log = common / "logs" / "refs" / "heads" / branch
            allow += [str(log)] if log.is_file() else []
    if common is None:
        return [], []
    deny = [str(p) for p in sorted(common.iterdir()) if p.name not in WALKED + TRANSIENT]
    deny += [str(p) for p in sorted((common / "worktrees").glob("*")) if p not in keep_admin]
    deny += _beside(common, "refs", keep_refs)  # names as refs/heads/x
    deny += _beside(common / "logs", "", keep_refs)  # the reflogs: logs/HEAD is main's, logs/refs/heads/x

    return list(dict.fromkeys(allow)), deny


def _beside(root: Path, rel: str, keep: set[str]) -> list[str]:
    """Every existing path under root/rel that is neither a kept ref nor on the way to one."""
    out: list[str] = []
    here = root / rel if rel else root
    try:
        entries = sorted(here.iterdir())
    except OSError:
        return out
    for p in entries:
        name = f"{rel}/{p.name}" if rel else p.name
        if name in keep:
            continue
        if p.is_dir() and not p.is_symlink() and any(k.startswith(name + "/") for k in keep):
            out += _beside(root, name, keep)
        else:
            out.append(str(p))
    return out
