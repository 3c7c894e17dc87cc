"""What `git worktree remove` would delete that no commit holds: nested repositories (a directory with
its own `.git`, which `git add -A` records only as a gitlink to a commit that exists nowhere else) and
ignored files (an agent's `.env.local`). Nested repositories are moved aside, whole, to
`<task>/kept/<label>/<path>`; ignored files go into a commit on an archive ref, up to a size cap."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from spark_git.core.git import Git
from spark_git.ops import archive
from spark_git.state.store import Store


def _untracked(wt: Git, *extra: str) -> list[str]:
    return [p for p in wt.run("ls-files", "-z", "--others", *extra).stdout.split("\0") if p]


def keep_nested(store: Store, task: str, label: str, path: Path) -> list[archive.KeptPath]:
    """Moves every untracked or ignored nested repository of the worktree at `path` aside."""
    # `ls-files --others` stops at a nested repository and lists it with a trailing slash.
    nested = [p.rstrip("/") for p in _untracked(Git(path)) if p.endswith("/")]
    kept = []
    for rel in nested:
        src = path / rel
        if not (src / ".git").exists():
            continue
        dest = store.layout.task_dir(task) / archive.KEPT / label / rel
        n = 1
        while dest.exists():  # never overwrite an earlier kept copy
            n += 1
            dest = dest.with_name(f"{Path(rel).name}.{n}")
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(src, dest)
        kept.append(archive.KeptPath(task=task, path=str(dest), was=str(src)))
    if kept:
        store.event(task, "nested_repositories_kept", None, kept=[k.model_dump() for k in kept])
    return kept


def keep_ignored(store: Store, task: str, label: str, path: Path, session: str | None) -> archive.Archived | None:
    """A commit (parent HEAD) of HEAD's tree plus the worktree's ignored files, smallest first up to
    `[archive] ignored_max_bytes` in all; the rest are named in `skipped`."""
    wt = Git(path)
    files = sorted(p for p in _untracked(wt, "--ignored", "--exclude-standard") if not p.endswith("/") and (path / p).is_file())
    if not files:
        return None
    cap = store.layout.config.archive.ignored_max_bytes
    taken: list[str] = []
    skipped: list[str] = []
    total = 0
    for rel in sorted(files, key=lambda f: (os.lstat(path / f).st_size, f)):
        size = os.lstat(path / rel).st_size
        if total + size <= cap:
            taken.append(rel)
            total += size
        else:
            skipped.append(rel)
    if skipped:
        store.event(task, "ignored_files_not_archived", session, worktree=str(path), cap=cap, files=sorted(skipped))
    if not taken:
        return None
    sha = archive.commit_with_files(wt, sorted(taken), f"spark-git: ignored files of {path}\n\nSaved by spark-git before removing the worktree.\n")
    a = archive.keep(store, task, f"ignored-{label}", sha, f"ignored files in {path}", session)
    a.files, a.skipped = sorted(taken), sorted(skipped)
    return a
