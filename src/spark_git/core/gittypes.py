"""Plain types and names of the git layer (no process is run here)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import NewType

# Re-exported: defined in gitlite, where the status line imports it without this module's cost.
from spark_git.core.gitlite import GIT_LOCATION_ENV as GIT_LOCATION_ENV

LocalBranch = NewType("LocalBranch", str)  # short name, e.g. "add-oauth"
Sha = NewType("Sha", str)

ZERO_SHA = Sha("0" * 40)



@dataclass(frozen=True)
class Out:
    returncode: int
    stdout: str
    stderr: str

    @property
    def lines(self) -> list[str]:
        return [ln for ln in self.stdout.splitlines() if ln]


@dataclass(frozen=True)
class RepoInfo:
    toplevel: Path | None  # worktree we stand in (None when bare)
    git_dir: Path
    common_dir: Path
    main_worktree: Path


@dataclass
class Worktree:
    path: Path
    head: Sha | None = None
    branch: LocalBranch | None = None
    detached: bool = False
    bare: bool = False
    locked: bool = False
    prunable: bool = False
    extra: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class StatusEntry:
    code: str  # two-letter porcelain code, "??" for untracked
    path: str

    def __str__(self) -> str:
        return f"{self.code} {self.path}"


# Components of lowercase letters, digits, '.', '_', '-' that start with a letter or digit: a subset of
# what `git check-ref-format --branch` accepts once '..', a trailing '.' and '.lock' are excluded.
_PLAIN_BRANCH = re.compile(r"[a-z0-9][a-z0-9._-]*(/[a-z0-9][a-z0-9._-]*)*")


def plainly_valid_branch(name: str) -> bool:
    return (
        _PLAIN_BRANCH.fullmatch(name) is not None
        and ".." not in name
        and not name.endswith(".")
        and not any(c.endswith(".lock") for c in name.split("/"))
    )


def branch_ref(branch: str) -> str:
    return branch if branch.startswith("refs/") else f"refs/heads/{branch}"
