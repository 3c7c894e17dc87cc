"""Codex CLI's own sandbox for agent sessions (issue 22): a `.codex/config.toml` in each agent worktree
(Codex reads a linked worktree's own config.toml, while its hooks come from the main checkout) with a
permission profile built on Codex's `:workspace`: a session writes its cwd — the agent worktree — and,
for git to commit there, the object store, the worktree's admin directory and `refs/heads` with its
logs (a ref is written through a lock file beside it, so the directory must be writable); every
other branch that exists when the file is written (main, the task branches, the other agents') is
read-only again, file by file. So a ref write the hook cannot read (`… | base64 -d | sh`) fails in
the kernel; a branch created later stays writable until the files are regenerated (spark-git does
that whenever it creates agent worktrees). Codex keeps `.git` and `.codex` inside a writable root
read-only itself. The user's spark-git state directory (the approval and verdict keys) is unreadable.

The file is kept out of git by one line in the common `info/exclude`, and is only ever written or
removed while it is spark-git's (its first line says so)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from spark_git.clients import originals
from spark_git.core.paths import linked_admin
from spark_git.core.sshsig import state_dir
from spark_git.state.files import write_text_atomic

FILE = Path(".codex", "config.toml")
PROFILE = "spark-git-agent"
MARK = "# spark-git: Codex's sandbox for this agent worktree (`spark-git hooks install --client codex`); regenerated, do not edit"
EXCLUDE_NOTE = "# spark-git: agents' Codex sandbox settings (`spark-git hooks install --client codex`; kept out of git)"
EXCLUDE_LINE = "/.codex/config.toml"


def _real(p: Path) -> Path:
    return Path(os.path.realpath(p))


def _temp_dirs() -> list[Path]:
    """What Codex's `:workspace` also opens: /tmp and $TMPDIR."""
    return [_real(Path(d)) for d in ("/tmp", os.environ.get("TMPDIR")) if d]


def admin_dir(worktree: Path) -> Path | None:
    """A linked worktree's own directory under `<common>/worktrees/` (its `.git` file names it)."""
    return linked_admin(worktree)


def _own_ref(admin: Path | None) -> str | None:
    try:
        head = (admin / "HEAD").read_text().strip() if admin else ""
    except OSError:
        return None
    return head[len("ref: "):] if head.startswith("ref: refs/heads/") else None


# Under the common dir, what git writes for an agent's commit, rebase or switch: new objects, its own
# branch (through a lock file in refs/heads) and its reflog, its worktree's admin dir, and
# `packed-refs.lock` in the common dir itself (git locks packed-refs for every ref deletion, even of
# CHERRY_PICK_HEAD at the end of a rebase). So the common dir is writable and everything in it is
# read-only again, entry by entry, except those; `refs` and `logs` are read-only but for the branch
# directories in them, so no new kind of ref (notes, tags, replace) can be made either.
GIT_WRITES = ("objects", "worktrees")
MADE_DIRS = ("hooks", "info", "refs/heads", "logs/refs/heads")  # made when missing, to exist to be protected
# What Codex (0.169, measured) keeps read-only under every writable root; a missing one it makes itself,
# as a mount point, when a session starts (and leaves behind): two agents' sessions starting at once
# raced on those of the roots they share ("Can't remount readonly on …/.git/.codex", "Can't mount tmpfs
# on …/logs/refs/heads/.codex": the second exits 1 before its first turn). Made beforehand in the shared
# roots (an agent's worktree and admin dir are its own), every session finds them there.
CODEX_KEEPS = (".git", ".codex", ".agents", ".aws")
SHARED_ROOTS = (".", "refs/heads", "logs/refs/heads")  # the writable roots of the profile under the common dir (_git_rules)
PACKED_HEADER = "# pack-refs with: peeled fully-peeled sorted \n"  # what `git pack-refs` writes


def _made(common: Path) -> None:
    """What the rules protect must exist (a path that is not there cannot be made read-only): a
    missing packed-refs would let the sandboxed agent create one, packing refs that shadow nothing
    loose (notes, tags)."""
    for d in (*MADE_DIRS, *(f"{root}/{keep}" for root in SHARED_ROOTS for keep in CODEX_KEEPS)):
        (common / d).mkdir(parents=True, exist_ok=True)
    packed = common / "packed-refs"
    if not packed.exists():
        write_text_atomic(packed, PACKED_HEADER)


def _git_rules(common: Path, admin: Path | None, own: str | None) -> dict[str, str]:
    rules = {str(common): "write"}
    rules |= {str(e): "read" for e in sorted(common.iterdir()) if e.name not in GIT_WRITES}
    for top in ("refs", "logs"):
        heads = common / top / "refs" / "heads" if top == "logs" else common / top / "heads"
        rules[str(heads)] = "write"
        under = common / top if top == "logs" else common
        rules |= {str(f): "read" for f in sorted(heads.rglob("*")) if f.is_file() and str(f.relative_to(under)) != own}
    others = [w for w in sorted((common / "worktrees").iterdir()) if w != admin] if (common / "worktrees").is_dir() else []
    rules |= {str(w): "read" for w in others}
    if admin is not None:
        rules[str(admin)] = "write"
    return rules


def _kept_out() -> dict[str, str]:
    """The user's spark-git state directory (the approval key and approvers, the verdict keys: issue 23)
    unreadable, as spelled and resolved. Codex's shell is its only way to read files, so this closes it."""
    d = state_dir()
    return {p: "none" for p in dict.fromkeys((os.path.abspath(d), os.path.realpath(d)))}


def wanted(worktree: Path, common_dir: Path) -> str:
    common, admin = _real(common_dir), admin_dir(worktree)
    rules = _git_rules(common, admin, _own_ref(admin)) | _kept_out()
    if any(common.is_relative_to(t) or _real(worktree).is_relative_to(t) for t in _temp_dirs()):
        rules |= {":slash_tmp": "read", ":tmpdir": "read"}  # the repository would be writable as a temp dir
    lines = [MARK, f'default_permissions = "{PROFILE}"', "", f"[permissions.{PROFILE}]", 'extends = ":workspace"', "",
             f"[permissions.{PROFILE}.filesystem]", *(f"{json.dumps(k)} = {json.dumps(v)}" for k, v in rules.items())]
    return "\n".join(lines) + "\n"


def ours(worktree: Path) -> bool:
    text = originals.read_exact(worktree / FILE)
    return text is not None and text.startswith(MARK)


def present(worktree: Path) -> bool:
    """spark-git's sandbox file is in the worktree (branches created since are not protected by it)."""
    return ours(worktree)


def apply(worktree: Path, common_dir: Path) -> bool:
    """Written when absent or spark-git's (a config of the user's is left alone: False)."""
    path = worktree / FILE
    if (path.exists() and not ours(worktree)) or originals.read_exact(path) == wanted(worktree, common_dir):
        return False
    _made(common_dir)
    state_dir().mkdir(parents=True, exist_ok=True, mode=0o700)  # a rule on a path that is not there protects nothing
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, wanted(worktree, common_dir))
    return True


def remove(worktree: Path) -> bool:
    if not ours(worktree):
        return False
    (worktree / FILE).unlink()
    try:
        (worktree / FILE.parent).rmdir()  # only when it held nothing else
    except OSError:
        pass
    return True


def exclude(common_dir: Path) -> bool:
    path = common_dir / "info" / "exclude"
    text = originals.read_exact(path) or ""
    if EXCLUDE_LINE in text.splitlines():
        return False
    sep = "" if not text or text.endswith("\n") else "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, f"{text}{sep}{EXCLUDE_NOTE}\n{EXCLUDE_LINE}\n")
    return True
