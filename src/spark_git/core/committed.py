"""The repository's config as committed on the base branch's tip (issue 23 item 4): what guards
landing (gates, approval, tasks_root, protocol, risk, queue) must not be changed by an untracked or
modified file that an agent can write. The main worktree's files are only compared with it: a
difference is warned about, never used. A change to the config lands like any other change (under the
config in force), and applies from the commit that lands it on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from spark_git.core import configfiles, hookconfig
from spark_git.core.errors import BadInput
from spark_git.core.git import Git
from spark_git.core.gittypes import branch_ref
from spark_git.core.hookconfig import DEDICATED, PYPROJECT

NAMES = (DEDICATED, PYPROJECT)


def section(main: Path, common: Path) -> tuple[dict[str, Any] | None, str | None, str]:
    """(data, source, key prefix) of the config committed on the base branch: the main worktree's
    branch, or the `base_branch` its committed config names. Warns when the main worktree's files
    say something else."""
    git = Git(main)
    start = branch = str(git.current_branch() or "main")
    tip, texts = git.files_at(branch_ref(branch), NAMES)
    data, source, prefix = configfiles.repo_section(main, texts, f"{branch_ref(branch)}:")
    named = (data or {}).get("base_branch")
    if isinstance(named, str) and named and named != branch:
        branch = named
        tip, texts = git.files_at(branch_ref(branch), NAMES)
        data, source, prefix = configfiles.repo_section(main, texts, f"{branch_ref(branch)}:")
    hookconfig.write_cache(common, {"from": start, "branch": branch, "tip": tip}, (data or {}).get("tasks_root"))
    _warn_drift(main, data, branch)
    return data, source, prefix


def drift(main: Path, committed: dict[str, Any] | None) -> list[str] | None:
    """The keys (dotted) where the main worktree's config differs from the committed one; None when
    the working-tree file does not parse."""
    texts = configfiles.worktree_texts(main)  # a directory in the config's place is bad input, here too
    try:
        mine, _, _ = configfiles.repo_section(main, texts)
    except BadInput:
        return None
    a, b = flat(committed or {}), flat(mine or {})
    return sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))


def flat(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in data.items():
        if isinstance(v, dict):
            out.update(flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def _warn_drift(main: Path, committed: dict[str, Any] | None, branch: str) -> None:
    keys = drift(main, committed)
    if keys == []:
        return
    what = "does not parse" if keys is None else f"differs from the committed one in {', '.join(keys)}"
    configfiles.warn(f"the config in {main} {what}; spark-git uses the one committed on {branch} "
                     f"(to change it, commit it to {branch}: it applies once it has landed)")
