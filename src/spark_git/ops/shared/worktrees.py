"""Creating the worktrees and branches of a task (`start`, `agent add`), and undoing exactly what a
failed call created."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from spark_git.core.errors import Blocked, CorruptState, SparkError
from spark_git.core.git import ZERO_SHA, Git, Sha, Worktree, branch_ref
from spark_git.core.layout import Layout
from spark_git.ops.shared import hooksetup
from spark_git.ops.shared.provision import ProvisionReport, failure_summary, included_files, provision
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


CREATE_MESSAGE = "spark-git start: create "  # the reflog message of every branch spark-git creates


def created_by_spark(git: Git, branch: str) -> bool:
    """The branch's reflog starts with spark-git creating it (a user's branch, or one whose reflog is
    gone, is never spark-git's to delete)."""
    out = git.run("reflog", "show", "--format=%gs", branch_ref(branch), "--", check=False)
    lines = out.lines
    return out.returncode == 0 and bool(lines) and lines[-1].startswith(CREATE_MESSAGE)


def stray_agent_branch(layout: Layout, store: Store, git: Git, task: str, branch: str) -> bool:
    """`branch` may be dropped as an agent branch of `task` that task.json does not name (an interrupted
    `agent add`): the templates give it to `task` alone, spark-git created it, and no other task claims
    it. A task named `task-t1-agent-zzz` next to `t1` has a branch that only looks like t1's."""
    owners = layout.agent_branch_owners(branch)
    if len(owners) != 1 or owners[0][0] != task or claimed_by_another_task(layout, store, task, branch):
        return False
    return created_by_spark(git, branch)


def claimed_by_another_task(layout: Layout, store: Store, task: str, branch: str) -> bool:
    """Another task's task.json names `branch` (its task branch, an agent's, one it created). A task
    whose task.json is absent or unreadable claims every branch its name could give under the templates."""
    for other in layout.task_names():
        if other == task:
            continue
        try:
            tf = store.read_task_here(other)
        except CorruptState:
            tf = None
        if tf is not None:
            if branch in (tf.task_branch, *(e.branch for e in tf.agents.values()), *tf.created_branches):
                return True
        elif branch == layout.task_branch(other) or any(t == other for t, _ in layout.agent_branch_owners(branch)):
            return True
    return False


def lost_head(path: Path) -> Sha | None:
    """The commit the worktree at `path` was last at, from its own HEAD reflog (kept in its admin dir
    when its branch is deleted under it); None if there is none or it is no longer a commit."""
    wt = Git(path)
    try:
        lines = wt.git_path("logs/HEAD").read_text().splitlines()
    except (OSError, SparkError):
        return None
    for line in reversed(lines):
        sha = line.split(" ", 2)[1] if line.count(" ") >= 2 else ""
        if sha and sha != ZERO_SHA and wt.run("cat-file", "-e", f"{sha}^{{commit}}", check=False).returncode == 0:
            return Sha(sha)
    return None


def ensure_worktree(
    git: Git, base_commit: str, branch: str, path: Path, registered: dict[Path, Worktree], created: Created, heads: dict[str, Sha] | None = None, *, checkout: bool = True
) -> None:
    ref = branch_ref(branch)
    if (ref not in heads) if heads is not None else (git.rev_parse(ref) is None):
        # Ours before git runs: a Ctrl-C right after `update-ref` (or one that stops it half-way) must
        # find it for the undo, which deletes it only if it is still at `base_commit` (compare-and-swap).
        created.branches.append((ref, base_commit))
        git.update_ref(ref, base_commit, ZERO_SHA, message=CREATE_MESSAGE + branch)
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
    # Ours from here (it was absent or empty): a Ctrl-C that also stops `git worktree add` half-way
    # must still find it in `created` for the undo.
    created.worktrees.append(path)
    if checkout:
        git.worktree_add(path, branch)
        init_submodules(path)  # best effort: a submodule git cannot fetch leaves the worktree usable
    else:  # checkout_new checks it out and unlocks it
        git.worktree_add(path, branch, checkout=False, lock_reason="initializing")


def init_submodules(path: Path) -> str | None:
    """`git submodule update --init --recursive` in a new worktree that has `.gitmodules`; git's
    stderr when it fails (the worktree stays usable; the failure is reported, not fatal)."""
    if not (path / ".gitmodules").is_file():
        return None
    r = Git(path).run("submodule", "update", "--init", "--recursive", "--quiet", check=False)
    return None if r.returncode == 0 else (r.stderr.strip() or f"git submodule update exited {r.returncode}")


def checkout_new(store: Store, paths: list[Path], progress: Progress) -> None:
    """Checks out worktrees registered with `--no-checkout --lock initializing`, in parallel: only
    registering a worktree needs the repo-wide mutex, and the checkout is most of the time on a large
    repo. Does what `git worktree add` does after registering (`reset --hard`, the post-checkout hook);
    a worktree is unlocked only when complete, so a kill leaves it "initializing" for the resume."""
    if not paths:
        return
    from concurrent.futures import ThreadPoolExecutor

    hook = store.layout.git().hook_path("post-checkout")
    progress(f"checking out {len(paths)} worktree(s)")

    def one(path: Path) -> None:
        wt = Git(path)
        wt.run("reset", "--hard", "--quiet", "--no-recurse-submodules")
        if hook is not None:
            wt.run("hook", "run", "post-checkout", "--", ZERO_SHA, wt.out("rev-parse", "HEAD"), "1")
        problem = init_submodules(path)
        if problem is not None:
            store.event(store.layout.locate(path)[0] or "main", "submodules_not_initialised", None, worktree=str(path), problem=problem)
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
            except SparkError:  # `worktree add` stopped before registering it: only its own files are there
                if path.is_dir():
                    shutil.rmtree(path, ignore_errors=True)
                git.run("worktree", "prune", check=False)
        for ref, sha in reversed(created.branches):
            try:
                git.delete_ref(ref, sha, message="spark-git start: undo")
            except SparkError:
                pass
    if created.lock is not None:
        store.release_task(created.lock)


def setup_new(store: Store, task: str, new: list[tuple[str | None, Path]], no_setup: bool, progress: Progress) -> list[ProvisionReport]:
    """Copies include files into and runs the setup commands of the worktrees this call created; agent
    worktrees get each client's sandbox while its hooks are installed (clients/extras.py, through ops/shared/hooksetup)."""
    agents = [path for agent, path in new if agent is not None]
    hooksetup.new_worktrees(store.layout, store, agents, before=True)  # the settings file ignored before anything is copied
    included = included_files(store.layout) if new else []  # one scan of the main worktree for all of them
    reports = [provision(store.layout, store, task, agent, path, no_setup=no_setup, progress=progress, included=included) for agent, path in new]
    boxed = hooksetup.new_worktrees(store.layout, store, agents, before=False)  # over the copied settings, never under them
    for r in reports:
        r.sandbox = Path(r.worktree) in boxed
    if any(r.failed for r in reports):
        store.event(task, "setup_failed", None, summary=failure_summary(reports))
    return reports
