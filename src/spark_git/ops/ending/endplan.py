"""`cleanup --dry-run` / `abandon --dry-run`: what ending a task would archive, move aside, remove and
delete, decided from the same reads (the task's worktrees, as `Tree`s) and rules as the real run in
ops/ending/cleanup.py, writing nothing."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from spark_git.core.git import ZERO_SHA, Git, Sha, Worktree
from spark_git.ops.shared import archive, keep
from spark_git.ops.shared.worktrees import lost_head
from spark_git.state.models import TaskFile
from spark_git.state.store import ARCHIVE_PREFIX, Store, archive_ref_for

Contained = Callable[[str], bool]  # is this commit contained in the base branch?


@dataclass
class Tree:
    """One of the task's worktrees, as cleanup found it."""

    label: str  # "task" or the agent's name (or the directory's name for a stray worktree)
    path: Path
    wt: Worktree | None  # None: not registered in git
    dirty: list[str] = field(default_factory=list)
    partly_removed: bool = False  # tracked files deleted by an interrupted removal (committed: nothing lost)
    found: keep.Scan = field(default_factory=keep.Scan)  # what `worktree remove` would delete beyond `dirty`
    submodules: list[tuple[str, str]] = field(default_factory=list)  # initialised (archived before removal)
    caches: bool = False  # untracked build caches (not work, not archived) that `worktree remove` needs --force for


@dataclass
class Planned:
    """EndData's lists, as a real run would fill them."""

    archived: list[archive.Archived] = field(default_factory=list)
    removed_worktrees: list[str] = field(default_factory=list)
    deleted_branches: list[str] = field(default_factory=list)
    kept_branches: list[str] = field(default_factory=list)
    kept_paths: list[str] = field(default_factory=list)


def plan(store: Store, tf: TaskFile, git: Git, trees: list[Tree], branches: list[tuple[str, Sha]], contained: Contained,
         final: str) -> Planned:
    """--dry-run: what the real run would archive, move aside, remove and delete, decided by the same
    reads and rules, writing nothing (a commit the run would create is named `.../NEW`)."""
    task = tf.task_name
    data = Planned()

    def would(name: str, sha: str | None, what: str, files: list[str] | None = None) -> None:
        ref = archive_ref_for(task, name, sha) if sha else f"{ARCHIVE_PREFIX}{task}/{name}/NEW"
        data.archived.append(archive.Archived(ref=ref, sha=sha or "", what=what, files=files or []))

    for t in trees:
        if t.wt is None or t.wt.prunable or not t.path.is_dir():
            continue
        data.kept_paths += [str(keep.nested_dest(store, task, t.label, rel)) for rel in t.found.nested if (t.path / rel / ".git").exists()]
        for rel, head in keep.submodules(t.path):
            _, dirty = keep.submodule_state(Git(t.path), t.path / rel, head)
            would(f"submodule-{t.label}-{rel.replace('/', '-')}", None if dirty else head, f"submodule {rel} of {t.path}", dirty)
        taken, large = keep.select_ignored(store, t.path, t.found.ignored)
        if taken:
            would(f"ignored-{t.label}", None, f"ignored files in {t.path}", taken)
        data.kept_paths += [str(keep.nested_dest(store, task, t.label, rel)) for rel in large]  # over the cap: moved aside
    for t in trees:
        if t.dirty:
            would(f"uncommitted-{t.label}", None, f"uncommitted work in {t.path}", t.dirty)
    for t in trees:
        if t.wt is not None and t.wt.detached and t.wt.head and not contained(t.wt.head):
            would(f"detached-{t.label}", t.wt.head, f"detached HEAD of {t.path}")
        elif t.wt is not None and t.wt.branch and (t.wt.head or ZERO_SHA) == ZERO_SHA and t.path.is_dir():
            lost = lost_head(t.path)
            if lost is not None and not contained(lost):
                would(f"lost-{t.label}", lost, f"head of {t.path}, whose branch {t.wt.branch} was deleted")
    for b, head in branches:
        if not contained(head):
            would(b, head, f"branch {b}")
    return _plan_removal(git, trees, branches, contained, final, data)


def _plan_removal(git: Git, trees: list[Tree], branches: list[tuple[str, Sha]], contained: Contained, final: str, data: Planned) -> Planned:
    """_remove_all's decisions, without acting: every registered worktree goes; a branch still out in
    another (not prunable) worktree, or unmerged at a cleanup, stays."""
    for t in sorted(trees, key=lambda t: t.label == "task"):
        if t.wt is not None:
            data.removed_worktrees.append(str(t.path))
        elif t.path.exists() and any(t.path.iterdir()):
            data.kept_paths.append(str(t.path))
    ours = {t.path for t in trees}
    still_out = {wt.branch for wt in git.worktrees() if wt.branch and not wt.prunable and wt.path.resolve() not in ours}
    for b, head in branches:
        (data.kept_branches if b in still_out or not (contained(head) or final == "ABANDONED") else data.deleted_branches).append(b)
    return data
