"""The user's secret keys in the spark-git state directory ($XDG_STATE_HOME/spark-git, default
~/.local/state/spark-git): 32 random bytes (hex) per file, created 0600 on first use, never in the
repository or a worktree. The verdict keys (gates/verdictkey.py) and the records key (state/recordmac.py)
are made and read here, once. Keeping them from agents is the OS boundary's job: agents' boxes hide the
directory, Claude Code's sandbox denies it, the hook refuses its paths."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from spark_git.core.paths import state_dir


def inside(repo_paths: list[Path]) -> bool:
    """The state directory lies inside the repository (`repo_paths`: its worktrees, git dir, tasks root)."""
    real = Path(os.path.realpath(state_dir()))
    return any(real.is_relative_to(os.path.realpath(p)) for p in repo_paths)


def load(path: Path, repo_paths: list[Path]) -> bytes | None:
    """The key in `path` (under the state directory), created on first use (racers agree: the first
    link wins). None when the state dir lies inside the repository, where an agent could read it, or
    cannot be read or written here (an agent's box hides it, Claude Code's sandbox denies it)."""
    if inside(repo_paths):
        return None
    try:
        return bytes.fromhex(path.read_text().strip())
    except FileNotFoundError:
        pass
    except (OSError, ValueError):  # unreadable here, or not a key: nothing verifies with it
        return None
    try:
        _create(path)
        return bytes.fromhex(path.read_text().strip())
    except (OSError, ValueError):  # a read-only or hidden state directory (an agent's box)
        return None


def _create(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, (secrets.token_hex(32) + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(tmp, path)  # never replaces a key a racer created: what it authenticated stays valid
    except FileExistsError:
        pass
    finally:
        tmp.unlink()
