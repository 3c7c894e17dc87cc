"""The tree a gate vouches for and nothing else: a checkout of exactly the commit, kept per task and
gate under `<tasks_root>/.gates/<name>` and reset before every run (`checkout -f` + `clean -ffdx`), so
no ignored file of the agent's worktree (a stale `__pycache__/*.pyc` built from other code) nor of an
earlier run gets in. Then what the configuration puts in every worktree: the `[worktree] include`
files and what the `[worktree] setup` commands make (run in the gate's box: they run the agent's tree);
not the agent clients' local hook settings, which only an agent's worktree needs."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from spark_git.core.errors import GitError
from spark_git.core.git import Git
from spark_git.core.layout import Layout
from spark_git.gates import confine
from spark_git.ops.shared import envs, provision
from spark_git.state.locks import WORKTREES
from spark_git.state.store import Store

GATES_DIR = ".gates"


def checkout_path(layout: Layout, name: str) -> Path:
    return layout.tasks_root / GATES_DIR / name


def clean_checkout(store: Store, name: str, commit: str, task: str, agent: str | None = None) -> Path:
    """`commit` checked out, clean, in the gate checkout `name` (created on first use); the include
    files copied and the setup commands run there. Raises GitError when git cannot (its stderr kept)."""
    layout = store.layout
    path = checkout_path(layout, name)
    with store.mutex(WORKTREES):
        fresh = not _ours(layout, path)
        if fresh:
            _recreate(layout.git(), path, commit)
    if not fresh:  # a new checkout is exactly the commit already: git wrote every file and nothing else
        wt = Git(path)
        wt.run("checkout", "--quiet", "--force", "--detach", commit)
        wt.run("clean", "-ffdxq")
    rep = provision.ProvisionReport(agent=agent, worktree=str(path))
    provision.copy_included(layout, path, rep, provision.included_files(layout, clients=False))
    if layout.config.worktree.setup:
        env = envs.for_worktree(store, task, agent)
        provision.run_setup(layout, store, task, agent, path, rep, lambda _msg: None, sandbox=confine.for_worktree(layout, path, env))
        if rep.failed is not None:
            raise GitError(["setup", str(rep.failed.command)], rep.failed.exit_code or 1,
                           f"the [worktree] setup command failed in the gate's checkout {path}; log: {rep.failed.log}", str(path))
    return path


def remove_checkouts(layout: Layout, task: str) -> None:
    """The task's gate checkouts, at cleanup (call with the WORKTREES mutex held). Only commits are
    checked out there and a run's outputs are thrown away before the next: nothing is lost."""
    shutil.rmtree(layout.tasks_root / GATES_DIR / task, ignore_errors=True)


def _ours(layout: Layout, path: Path) -> bool:
    """The checkout is still the worktree git made there: its `.git` file names an admin dir of this
    repository that names it back. Gate code that re-pointed it (a box pins it; an unsandboxed gate
    does not) would have the next `checkout` run a git dir of its own, config and all."""
    if not (path / ".git").is_file():
        return False
    admin = Git(path).admin_dir()
    try:
        back = Path((admin / "gitdir").read_text(encoding="utf-8").strip())
    except (OSError, UnicodeDecodeError):
        return False
    worktrees = Path(os.path.realpath(layout.repo.common_dir / "worktrees"))
    return Path(os.path.realpath(admin)).parent == worktrees and os.path.realpath(back) == os.path.realpath(path / ".git")


def _recreate(git: Git, path: Path, commit: str) -> None:
    """A new detached worktree at `path` (a leftover directory that git no longer knows is replaced;
    `--force` also takes a path git still lists after the directory went away)."""
    if path.exists():
        shutil.rmtree(path)  # under .gates: only spark-git writes there, and only checkouts of commits
        git.worktree_prune()
    path.parent.mkdir(parents=True, exist_ok=True)
    git.run("worktree", "add", "--quiet", "--detach", "--force", str(path), commit)
