"""Creating the worktrees and branches of a task (`start`, `agent add`), and undoing exactly what a
failed call created."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from spark_git.core.errors import Blocked, SparkError
from spark_git.core.git import ZERO_SHA, Git, Sha, Worktree, branch_ref
from spark_git.ops.provision import ProvisionReport, failure_summary, provision
from spark_git.state.locks import WORKTREES
from spark_git.state.store import Store

Progress = Callable[[str], None]


def quiet(_: str) -> None:
    pass


@dataclass
class Created:
    branches: list[tuple[str, str]] = field(default_factory=list)  # (ref, sha)
    worktrees: list[Path] = field(default_factory=list)
    lock: str | None = None  # the task whose lock this call took


def ensure_worktree(
    git: Git, base_commit: str, branch: str, path: Path, registered: dict[Path, Worktree], created: Created, heads: dict[str, Sha] | None = None, *, checkout: bool = True
) -> None:
    ref = branch_ref(branch)
    if (ref not in heads) if heads is not None else (git.rev_parse(ref) is None):
        git.update_ref(ref, base_commit, ZERO_SHA, message=f"spark-git start: create {branch}")
        created.branches.append((ref, base_commit))
    wt = registered.get(path.resolve())
    if wt is not None and wt.locked and "initializing" in wt.extra.get("locked", ""):
        # `git worktree add` was killed mid-checkout: the directory holds no work of anyone's yet.
        git.run("worktree", "remove", "--force", "--force", str(path))
        wt = None
    if wt is not None:
        if wt.branch != branch:
            raise Blocked(f"{path} is a worktree on {wt.branch or 'a detached HEAD'}, expected branch {branch}")
        return
    if path.exists() and any(path.iterdir()):
        raise Blocked(f"{path} exists and is not a registered worktree; move it away first")
    path.parent.mkdir(parents=True, exist_ok=True)
    if checkout:
        git.worktree_add(path, branch)
    else:  # checkout_new checks it out and unlocks it
        git.worktree_add(path, branch, checkout=False, lock_reason="initializing")
    created.worktrees.append(path)


def checkout_new(store: Store, paths: list[Path], progress: Progress) -> None:
    """Checks out worktrees registered with `--no-checkout --lock initializing`, in parallel: only
    registering a worktree needs the repo-wide mutex, and the checkout is most of the time on a large
    repo. Does what `git worktree add` does after registering (`reset --hard`, the post-checkout hook);
    a worktree is unlocked only when complete, so a kill leaves it "initializing" for the resume."""
    if not paths:
        return
    from concurrent.futures import ThreadPoolExecutor

    hook = store.layout.git().hook_path("post-checkout")

    def one(path: Path) -> None:
        wt = Git(path)
        wt.run("reset", "--hard", "--quiet", "--no-recurse-submodules")
        if hook is not None:
            wt.run("hook", "run", "post-checkout", "--", ZERO_SHA, wt.out("rev-parse", "HEAD"), "1")
        progress(f"checked out {path}")

    with ThreadPoolExecutor(max_workers=min(len(paths), max(2, os.cpu_count() or 2))) as pool:
        for _ in pool.map(one, paths):
            pass
    # `worktree unlock` reads every worktree's admin dir, which a concurrent `worktree add` may be
    # half-way through writing ("failed to read .../commondir"): it needs the mutex too.
    with store.mutex(WORKTREES):
        git = store.layout.git()
        for path in paths:
            git.worktree_unlock(path)


def undo(store: Store, created: Created) -> None:
    """Best effort: remove exactly what this call created, newest first."""
    git = store.layout.git()
    with store.mutex(WORKTREES):
        for path in reversed(created.worktrees):
            try:  # twice --force: ours may still be locked "initializing"
                git.run("worktree", "remove", "--force", "--force", str(path))
            except SparkError:
                pass
        for ref, sha in reversed(created.branches):
            try:
                git.delete_ref(ref, sha, message="spark-git start: undo")
            except SparkError:
                pass
    if created.lock is not None:
        store.release_task(created.lock)


def setup_new(store: Store, task: str, new: list[tuple[str | None, Path]], no_setup: bool, progress: Progress) -> list[ProvisionReport]:
    """Copies include files into and runs the setup commands of the worktrees this call created."""
    reports = [provision(store.layout, task, agent, path, no_setup=no_setup, progress=progress) for agent, path in new]
    if any(r.failed for r in reports):
        store.event(task, "setup_failed", None, summary=failure_summary(reports))
    return reports
