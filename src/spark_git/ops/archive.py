"""Archive refs: `refs/spark/archive/<task>/<name>/<sha12>`, written by compare-and-swap before anything could
drop a commit (a branch deleted, a worktree removed, a rebase aborted). Uncommitted work is archived as
a commit of the worktree's whole state (untracked files included) whose parent is its HEAD."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel

from spark_git.core.errors import BadInput, GitError
from spark_git.core.git import ZERO_SHA, Git, Sha, branch_ref
from spark_git.core.layout import Layout
from spark_git.state.backends import as_store, open_store
from spark_git.state.store import ARCHIVE_PREFIX, Store

FALLBACK_IDENT = {
    "GIT_AUTHOR_NAME": "spark-git", "GIT_AUTHOR_EMAIL": "spark-git@localhost",
    "GIT_COMMITTER_NAME": "spark-git", "GIT_COMMITTER_EMAIL": "spark-git@localhost",
}


class Archived(BaseModel):
    ref: str
    sha: str
    what: str  # "branch <name>", "uncommitted work in <path>", "detached HEAD of <path>"
    files: list[str] = []  # for uncommitted work: the files it holds


def keep(store: Store | Layout, task: str, name: str, sha: str, what: str, session: str | None = None) -> Archived:
    """Makes `sha` reachable from `refs/spark/archive/<task>/<name>/<sha12>` (the same scheme `merge`
    uses before it rewrites a branch). Idempotent; an existing ref is never moved."""
    ref = as_store(store).archive(task, name, sha, what, session)
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


def keep_uncommitted(store: Store | Layout, task: str, label: str, path: Path, files: list[str], session: str | None = None) -> Archived:
    wt = Git(path)
    msg = f"spark-git: uncommitted work of {path}\n\nSaved by spark-git before removing the worktree.\n\nFiles:\n" + "".join(f"  {f}\n" for f in files)
    sha = snapshot_commit(wt, msg)
    a = keep(store, task, f"uncommitted-{label}", sha, f"uncommitted work in {path}", session)
    a.files = files
    return a


# -- archive list / restore ---------------------------------------------------------------------


class ArchiveEntry(BaseModel):
    ref: str
    task: str
    name: str
    sha: str
    date: str
    subject: str


class ArchiveListData(BaseModel):
    entries: list[ArchiveEntry]


def list_refs(layout: Layout, task: str | None = None) -> ArchiveListData:
    return ArchiveListData(entries=[ArchiveEntry(**r._asdict()) for r in open_store(layout).archived(task)])


class RestoreData(BaseModel):
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
