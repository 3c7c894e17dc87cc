"""`archive list` and `archive restore`: the archive refs (shared/archive.py writes them) and the
nested repositories kept by cleanups, listed; one restored as a new branch."""

from __future__ import annotations

import os

from spark_git.core.errors import BadInput, GitError
from spark_git.core.git import ZERO_SHA, branch_ref
from spark_git.core.layout import Layout
from spark_git.core.model import Model
from spark_git.ops.shared.archive import KEPT, KeptPath
from spark_git.state.backends import open_store
from spark_git.state.store import ARCHIVE_PREFIX


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
