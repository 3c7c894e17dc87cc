"""A repository spark-git does not trust, read from this repository's side: an agent worktree's
submodule, whose git dir (under the agent's admin dir, or wherever its `.git` file points) and config
the agent can write. git is never run inside it: a plain `git status` there runs whatever its config's
core.fsmonitor or filters name, as the user. Its HEAD and commits come through upload-pack (`ls-remote`,
`fetch`), which runs nothing a repository's own config names; its files through a temporary index of
this repository, with this repository's config."""

from __future__ import annotations

import tempfile
from pathlib import Path

from spark_git.core import paths
from spark_git.core.git import Git
from spark_git.core.gittypes import Sha

# The user's fsmonitor watches the user's worktree, not this one: asked about it, it would answer for
# the wrong files (and an `add -A` built on its answer would miss changes).
OWN_FILES = ("-c", "core.fsmonitor=false", "-c", "core.untrackedCache=false")
NESTED_MAX = 8  # submodules of submodules, this deep at most (a `.git` file can name its own parent)


def head(git: Git, path: Path) -> Sha | None:
    """The commit the repository at `path` has checked out, as its upload-pack advertises it; None on
    an unborn branch. Raises GitError (git's stderr kept) when git cannot read it: nothing of it may
    be deleted unseen."""
    line = git.run("ls-remote", str(path), "HEAD").stdout.split("\n", 1)[0]
    return Sha(line.split("\t", 1)[0]) if "\t" in line else None


def fetch(git: Git, path: Path, sha: str) -> None:
    """`sha` (a commit the repository at `path` advertises) and its history copied into this repository's
    object store; no ref, no FETCH_HEAD."""
    git.run("fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--no-auto-gc", "--no-recurse-submodules", str(path), sha)


def files_tree(git: Git, path: Path) -> str:
    """The tree of the files under `path` as they are: untracked ones included, ignored ones not (its
    `.gitignore` files apply), built in a temporary index of this repository."""
    with tempfile.TemporaryDirectory(prefix="spark-index-") as d:
        # GIT_DIR named: git in `path` would otherwise find the submodule's own `.git`
        ours = Git(path, {**git.env, "GIT_DIR": str(git.admin_dir()), "GIT_WORK_TREE": str(path), "GIT_INDEX_FILE": str(Path(d) / "index")})
        ours.run(*OWN_FILES, "add", "-A")
        return ours.run("write-tree").stdout.strip()


def gitlinks(git: Git, path: Path) -> list[tuple[str, Sha]]:
    """(path, recorded commit) of every gitlink in the index of the repository at `path`, its index read
    as data by this repository's git."""
    gd = paths.git_dir_of(path)
    if gd is None or not (gd / "index").is_file():
        return []
    env = {"GIT_INDEX_FILE": str(gd / "index")}
    out = git.run(*OWN_FILES, "ls-files", "--stage", "-z", env=env).stdout
    res = []
    for item in out.split("\0"):
        meta, _, rel = item.partition("\t")
        fields = meta.split()
        if len(fields) == 3 and fields[0] == "160000":
            res.append((rel, Sha(fields[1])))
    return res
