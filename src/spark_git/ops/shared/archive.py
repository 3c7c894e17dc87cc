"""Archive refs: `refs/spark/archive/<task>/<name>/<sha12>`, written by compare-and-swap before anything could
drop a commit (a branch deleted, a worktree removed, a rebase aborted). Uncommitted work is archived as
a commit of the worktree's whole state (untracked files included) whose parent is its HEAD."""

from __future__ import annotations

from pathlib import Path

from spark_git.core.errors import GitError
from spark_git.core.git import Git, Sha
from spark_git.core.model import Model
from spark_git.state.store import Store

FALLBACK_IDENT = {
    "GIT_AUTHOR_NAME": "spark-git", "GIT_AUTHOR_EMAIL": "spark-git@localhost",
    "GIT_COMMITTER_NAME": "spark-git", "GIT_COMMITTER_EMAIL": "spark-git@localhost",
}


class Archived(Model):
    ref: str
    sha: str
    what: str  # "branch <name>", "uncommitted work in <path>", "detached HEAD of <path>"
    files: list[str] = []  # for uncommitted work: the files it holds
    skipped: list[str] = []  # ignored files left out (over `[archive] ignored_max_bytes`)


KEPT = "kept"  # <task>/kept/<label>/<path>: nested repositories moved out of a removed worktree


class KeptPath(Model):
    task: str
    path: str  # where the directory is now
    was: str | None = None  # where it was (inside a removed worktree); None when listed from disk


def keep(store: Store, task: str, name: str, sha: str, what: str, session: str | None = None, *, event: bool = True) -> Archived:
    """Makes `sha` reachable from `refs/spark/archive/<task>/<name>/<sha12>` (the same scheme `merge`
    uses before it rewrites a branch). Idempotent; an existing ref is never moved. `event`: logged in
    the task's audit trail."""
    ref = store.archive(task, name, sha, what, session, event=event)
    return Archived(ref=ref, sha=sha, what=what)


def snapshot_commit(wt: Git, message: str) -> Sha:
    """A commit of the worktree's full state (index untouched), parent HEAD."""
    tree = wt.full_state_tree()
    return _commit_on_head(wt, tree, message)


def _commit_on_head(wt: Git, tree: str, message: str) -> Sha:
    """A commit of `tree` whose parent is HEAD (none on an unborn branch)."""
    head = wt.rev_parse("HEAD")
    return commit_on(wt, tree, [head] if head else [], message)


def commit_on(git: Git, tree: str, parents: list[str], message: str) -> Sha:
    """A commit of `tree` on `parents`; with spark-git's own identity when the user has none configured
    (an archive must not fail for want of a name)."""
    try:
        return git.commit_tree(tree, parents, message, env={})
    except GitError as e:
        if "tell me who you are" not in e.stderr.lower() and "identity" not in e.stderr.lower():
            raise
        return git.commit_tree(tree, parents, message, env=FALLBACK_IDENT)


def commit_with_files(wt: Git, files: list[str], message: str) -> Sha:
    """A commit (parent HEAD) of HEAD's tree plus `files` as they are on disk, ignored or not; built in
    a temporary index so the worktree's own index is untouched."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="spark-index-") as d:
        env = {"GIT_INDEX_FILE": str(Path(d) / "index")}
        top = Git(wt.out("rev-parse", "--show-toplevel"), wt.env)
        top.run("read-tree", "HEAD", env=env)
        top.run("update-index", "--add", "-z", "--stdin", input="".join(f + "\0" for f in files), env=env)
        tree = top.run("write-tree", env=env).stdout.strip()
    return _commit_on_head(wt, tree, message)


def keep_uncommitted(store: Store, task: str, label: str, path: Path, files: list[str], session: str | None = None, *,
                     event: bool = True) -> Archived:
    wt = Git(path)
    msg = f"spark-git: uncommitted work of {path}\n\nSaved by spark-git before removing the worktree.\n\nFiles:\n" + "".join(f"  {f}\n" for f in files)
    sha = snapshot_commit(wt, msg)
    a = keep(store, task, f"uncommitted-{label}", sha, f"uncommitted work in {path}", session, event=event)
    a.files = files
    return a
