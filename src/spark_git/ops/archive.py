"""Archive refs: `refs/spark/archive/<task>/<name>/<sha12>`, written by compare-and-swap before anything could
drop a commit (a branch deleted, a worktree removed, a rebase aborted). Uncommitted work is archived as
a commit of the worktree's whole state (untracked files included) whose parent is its HEAD."""

from __future__ import annotations

import os
from pathlib import Path

from spark_git.core.errors import BadInput, GitError
from spark_git.core.git import ZERO_SHA, Git, Sha, branch_ref
from spark_git.core.layout import Layout
from spark_git.core.model import Model
from spark_git.state.backends import as_store, open_store
from spark_git.state.store import ARCHIVE_PREFIX, Store

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


def keep(store: Store | Layout, task: str, name: str, sha: str, what: str, session: str | None = None, *, event: bool = True) -> Archived:
    """Makes `sha` reachable from `refs/spark/archive/<task>/<name>/<sha12>` (the same scheme `merge`
    uses before it rewrites a branch). Idempotent; an existing ref is never moved. `event`: logged in
    the task's audit trail."""
    ref = as_store(store).archive(task, name, sha, what, session, event=event)
    return Archived(ref=ref, sha=sha, what=what)


def snapshot_commit(wt: Git, message: str) -> Sha:
    """A commit of the worktree's full state (index untouched), parent HEAD."""
    tree = wt.full_state_tree()
    head = wt.rev_parse("HEAD")
    parents: list[str] = [head] if head else []
    try:
        return wt.commit_tree(tree, parents, message, env={})
    except GitError as e:
        if "tell me who you are" not in e.stderr.lower() and "identity" not in e.stderr.lower():
            raise
        return wt.commit_tree(tree, parents, message, env=FALLBACK_IDENT)


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
    head = wt.rev_parse("HEAD")
    parents: list[str] = [head] if head else []
    try:
        return wt.commit_tree(tree, parents, message, env={})
    except GitError as e:
        if "tell me who you are" not in e.stderr.lower() and "identity" not in e.stderr.lower():
            raise
        return wt.commit_tree(tree, parents, message, env=FALLBACK_IDENT)


def keep_uncommitted(store: Store | Layout, task: str, label: str, path: Path, files: list[str], session: str | None = None, *,
                     event: bool = True) -> Archived:
    wt = Git(path)
    msg = f"spark-git: uncommitted work of {path}\n\nSaved by spark-git before removing the worktree.\n\nFiles:\n" + "".join(f"  {f}\n" for f in files)
    sha = snapshot_commit(wt, msg)
    a = keep(store, task, f"uncommitted-{label}", sha, f"uncommitted work in {path}", session, event=event)
    a.files = files
    return a


# -- archive list / restore ---------------------------------------------------------------------


class ArchiveEntry(Model):
    ref: str
    task: str
    name: str
    sha: str
    date: str
    subject: str


class ArchiveListData(Model):
    entries: list[ArchiveEntry]
    kept: list[KeptPath] = []  # nested repositories moved out of removed worktrees


def list_refs(layout: Layout, task: str | None = None) -> ArchiveListData:
    return ArchiveListData(entries=[ArchiveEntry(**r._asdict()) for r in open_store(layout).archived(task)], kept=list_kept(layout, task))


def list_kept(layout: Layout, task: str | None) -> list[KeptPath]:
    """Nested repositories kept by earlier cleanups: a directory holding `.git` under `<task>/kept/`."""
    res = []
    for t in [task] if task is not None else layout.task_names():
        roots = [layout.task_dir(t) / KEPT, *layout.task_dir(t).glob(f"history/*/{KEPT}")]  # earlier tasks of that name too
        for root in roots:
            for d, dirs, files in os.walk(root):
                if ".git" in dirs or ".git" in files:
                    res.append(KeptPath(task=t, path=d))
                    dirs.clear()
    return sorted(res, key=lambda k: k.path)


class RestoreData(Model):
    ref: str
    sha: str
    branch: str


def full_ref(ref: str) -> str:
    if ref.startswith("refs/"):
        if not ref.startswith(ARCHIVE_PREFIX):
            raise BadInput(f"{ref} is not an archive ref (they live under {ARCHIVE_PREFIX})")
        return ref
    return ARCHIVE_PREFIX + ref.removeprefix("archive/")


def restore(layout: Layout, ref: str, branch: str | None = None) -> RestoreData:
    """Creates `branch` (default: the archived name) at the archived commit, only if it does not exist."""
    store = open_store(layout)
    git = layout.git()
    ref = full_ref(ref)
    sha = store.archived_sha(ref)
    if sha is None:
        raise BadInput(f"no archive ref {ref}", hint="`spark-git archive list` shows them", next=["spark-git archive list"])
    rest = ref[len(ARCHIVE_PREFIX):].split("/")
    name = branch or ("/".join(rest[1:-1]) if len(rest) >= 3 else rest[-1])
    if name.startswith("refs/"):  # update-ref would create that ref (a tag, say), not a branch
        raise BadInput(f"bad branch name {name!r}: it is a full ref name; give the branch name only", hint="pass --branch NAME (e.g. v9, not refs/tags/v9)")
    if not git.is_valid_branch_name(name) or name.startswith("-"):
        raise BadInput(f"bad branch name {name!r} (git check-ref-format --branch)", hint="pass --branch NAME")
    if git.branch_head(name) is not None:
        raise BadInput(f"branch {name} already exists", hint="pass --branch NAME to restore under another name", details={"existing": git.branch_head(name)})
    try:
        git.update_ref(branch_ref(name), sha, ZERO_SHA, message=f"spark-git archive restore {ref}")
    except GitError as e:
        if git.branch_head(name) is not None:
            raise BadInput(f"branch {name} was just created by someone else", hint="pass --branch NAME") from e
        raise
    task = ref[len(ARCHIVE_PREFIX):].partition("/")[0]
    if task in store.task_names():  # the restore goes in the audit trail of a task spark-git knows
        store.event(task, "archive_restored", os.environ.get("SPARK_SESSION_ID"), ref=ref, sha=sha, branch=name)
    return RestoreData(ref=ref, sha=sha, branch=name)
