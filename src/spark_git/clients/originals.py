"""What a settings file held before `hooks install` first changed it, so that `uninstall` gives the
user's exact bytes back (formatting, line endings, escapes, empty lists) while the file is still as
spark-git left it. Kept per user, keyed by the file's path: `~/.local/state/spark-git/hooks-originals/`
(`$XDG_STATE_HOME` honoured), since a user-scope file belongs to no repository."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from spark_git.state.files import write_text_atomic


def _dir() -> Path:
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(state, "spark-git", "hooks-originals")


def _memo(path: Path) -> Path:
    return _dir() / (hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:32] + ".json")


def _read(memo: Path) -> dict[str, str | None] | None:
    """The memo, or None when there is none or it cannot be read (cut short, edited by hand): then
    there is no original to give back, and uninstall removes spark-git's entries one by one."""
    try:
        old = json.loads(memo.read_text())
    except (OSError, ValueError):
        return None
    ok = isinstance(old, dict) and isinstance(old.get("written"), str) and isinstance(old.get("original"), (str, type(None)))
    return old if ok else None


def _digest(text: str | None) -> str | None:
    return hashlib.sha256(text.encode()).hexdigest() if text is not None else None


def read_exact(path: Path) -> str | None:
    """The file's text with its line endings as they are (None: absent)."""
    return path.read_bytes().decode() if path.exists() else None


def remember(path: Path, before: str | None, after: str, clean: bool) -> None:
    """Called after install wrote `after` over `before`. The first original is kept while the file
    stays as spark-git left it; an original that already held spark-git's entries (`clean` False) or a
    file edited since the last install is not one to give back: the memo is dropped."""
    memo = _memo(path)
    old = _read(memo)
    if old is not None and old["written"] == _digest(before):
        original = old["original"]
    elif old is None and clean:
        original = before
    else:
        memo.unlink(missing_ok=True)
        return
    write_text_atomic(memo, json.dumps({"path": str(path), "original": original, "written": _digest(after)}) + "\n")


def original_if_untouched(path: Path) -> tuple[bool, str | None]:
    """(True, the original text, None if there was no file) when `path` is exactly as the last install
    left it; (False, None) otherwise (no memo, or edited since: the caller removes entries one by one)."""
    old = _read(_memo(path))
    if old is None or old["written"] != _digest(read_exact(path)):
        return False, None
    return True, old["original"]


def recorded(path: Path) -> str | None:
    """The original text the memo keeps, whether or not the file was edited since (None: none)."""
    old = _read(_memo(path))
    return old["original"] if old is not None else None


def forget(path: Path) -> None:
    _memo(path).unlink(missing_ok=True)
