"""What `git worktree remove` would delete that no commit holds: nested repositories (a directory with
its own `.git`, which `git add -A` records only as a gitlink to a commit that exists nowhere else) and
ignored files (an agent's `.env.local`). Nested repositories are moved aside, whole, to
`<task>/kept/<label>/<path>`; ignored files go into a commit on an archive ref, up to a size cap, and
those over it are moved aside beside them (never deleted)."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from spark_git.clients import extras, registry
from spark_git.core import gitforeign, paths
from spark_git.core.git import Git
from spark_git.ops.shared import archive
from spark_git.state.store import Store


@dataclass
class Scan:
    dirty: list[str] = field(default_factory=list)  # "XY path" as `git status` shows it (untracked included)
    ignored: list[str] = field(default_factory=list)  # ignored files
    nested: list[str] = field(default_factory=list)  # untracked or ignored directories with their own .git


def scan(path: Path) -> Scan:
    """One `git status` for everything a removal must account for. `--ignored=traditional` with
    `-uall` lists ignored files one by one, and a nested repository as `dir/` (git stops there)."""
    out = Git(path).run("status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignored=traditional").stdout
    res = Scan()
    parts = iter(out.split("\0"))
    for item in parts:
        if not item:
            continue
        code, rel = item[:2], item[3:]
        if code[0] in "RC":  # renames carry the source path as the next field
            next(parts, None)
        if code in ("??", "!!") and rel.endswith("/") and (path / rel / ".git").exists():
            res.nested.append(rel.rstrip("/"))
        if code == "!!":
            if not rel.endswith("/"):
                res.ignored.append(rel)
        else:
            res.dirty.append(f"{code} {rel}")
    return res


def keep_nested(store: Store, task: str, label: str, path: Path, nested: list[str]) -> list[archive.KeptPath]:
    """Moves the untracked or ignored nested repositories (`nested`, from scan()) of the worktree at `path` aside."""
    return move_aside(store, task, label, path, [rel for rel in nested if (path / rel / ".git").exists()], "nested_repositories_kept")


def move_aside(store: Store, task: str, label: str, path: Path, rels: list[str], kind: str) -> list[archive.KeptPath]:
    """Moves `rels` (relative to the worktree at `path`) to `<task>/kept/<label>/<rel>`, with the task's records."""
    kept = []
    for rel in rels:
        src = path / rel
        if not os.path.lexists(src):
            continue
        dest = nested_dest(store, task, label, rel)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(src, dest)
        kept.append(archive.KeptPath(task=task, path=str(dest), was=str(src)))
    if kept:
        store.event(task, kind, None, kept=[k.model_dump() for k in kept])
    return kept


def select_ignored(store: Store, path: Path, ignored: list[str]) -> tuple[list[str], list[str]]:
    """(taken, skipped): the ignored files still there, smallest first up to `[archive] ignored_max_bytes`."""
    own = {f for c in registry.every() for f in extras.of(c).own_files(path)}  # spark-git's own sandbox settings, untouched: nobody's work
    files = sorted(p for p in ignored if os.path.lexists(path / p) and p not in own)
    cap = store.layout.config.archive.ignored_max_bytes
    taken: list[str] = []
    skipped: list[str] = []
    total = 0
    for rel in sorted(files, key=lambda f: (os.lstat(path / f).st_size, f)):
        size = os.lstat(path / rel).st_size
        if total + size <= cap:
            taken.append(rel)
            total += size
        else:
            skipped.append(rel)
    return taken, skipped


def nested_dest(store: Store, task: str, label: str, rel: str) -> Path:
    """Where a nested repository is moved: `<task>/kept/<label>/<rel>`, never over an earlier copy."""
    dest = store.layout.task_dir(task) / archive.KEPT / label / rel
    n = 1
    while dest.exists():
        n += 1
        dest = dest.with_name(f"{Path(rel).name}.{n}")
    return dest


def keep_ignored(store: Store, task: str, label: str, path: Path, ignored: list[str], session: str | None) -> archive.Archived | None:
    """A commit (parent HEAD) of HEAD's tree plus the worktree's ignored files, smallest first up to
    `[archive] ignored_max_bytes` in all; the rest are named in `skipped` (keep_large moves them aside)."""
    wt = Git(path)
    taken, skipped = select_ignored(store, path, ignored)
    if not taken:
        return None
    sha = archive.commit_with_files(wt, sorted(taken), f"spark-git: ignored files of {path}\n\nSaved by spark-git before removing the worktree.\n")
    a = archive.keep(store, task, f"ignored-{label}", sha, f"ignored files in {path}", session)
    a.files, a.skipped = sorted(taken), sorted(skipped)
    return a


def keep_large(store: Store, task: str, label: str, path: Path, ignored: list[str]) -> list[archive.KeptPath]:
    """The ignored files over the archive's cap, moved aside with the task's records."""
    _, skipped = select_ignored(store, path, ignored)
    return move_aside(store, task, label, path, skipped, "ignored_files_kept")


def submodules(path: Path, *, moved_only: bool = False) -> list[tuple[str, str]]:
    """(path, HEAD) of the initialised submodules of the worktree at `path`, and of theirs; `moved_only`:
    those whose HEAD is not the commit their superproject records. Read from this repository's side
    (core/gitforeign.py): the agent can write a submodule's git dir and config, so git never runs there."""
    if not (path / ".gitmodules").is_file():
        return []
    return _submodules(Git(path), path, "", moved_only, gitforeign.NESTED_MAX)


def _submodules(git: Git, path: Path, prefix: str, moved_only: bool, depth: int) -> list[tuple[str, str]]:
    res: list[tuple[str, str]] = []
    for rel, recorded in gitforeign.gitlinks(git, path) if depth > 0 else []:
        sub = path / rel
        head = gitforeign.head(git, sub) if paths.git_dir_of(sub) is not None else None
        if head is None:  # not initialised: nothing of its own to keep
            continue
        if not moved_only or head != recorded:
            res.append((prefix + rel, head))
        res += _submodules(git, sub, f"{prefix}{rel}/", moved_only, depth - 1)
    return res


def submodule_state(git: Git, sub: Path, head: str) -> tuple[str, list[str]]:
    """(tree of the submodule's files as they are, the paths where they differ from `head`), its HEAD's
    commits copied into this repository first."""
    gitforeign.fetch(git, sub, head)
    tree = gitforeign.files_tree(git, sub)
    return tree, git.run("diff-tree", "-r", "--name-only", "-z", "--no-renames", head, tree).stdout.split("\0")[:-1]


def keep_submodules(store: Store, task: str, label: str, path: Path, subs: list[tuple[str, str]], session: str | None) -> list[archive.Archived]:
    """Each submodule's HEAD, plus its uncommitted state as a commit on top, kept in this repository on
    an archive ref: `worktree remove --force` deletes the submodule's repository with the worktree."""
    git = Git(path)
    kept = []
    for rel, head in subs:
        tree, dirty = submodule_state(git, path / rel, head)
        sha = archive.commit_on(git, tree, [head], f"spark-git: uncommitted work of submodule {rel} in {path}\n") if dirty else head
        name = f"submodule-{label}-{rel.replace('/', '-')}"
        a = archive.keep(store, task, name, sha, f"submodule {rel} of {path}", session)
        a.files = dirty
        kept.append(a)
    return kept
