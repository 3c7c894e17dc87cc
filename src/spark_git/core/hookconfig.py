"""The committed tasks_root, for the hook's fast path (standard library only, no git process when
spark-git's cache under <git-common-dir>/spark/ still matches the base branch's tip). The working
tree's config is never read here: an untracked `.spark-git.toml` pointing tasks_root elsewhere would
switch the hook off for every agent (issue 23)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from spark_git.core import gitlite

CACHE = "committed-config.json"  # written by core/committed.py
DEDICATED, PYPROJECT = ".spark-git.toml", "pyproject.toml"
# A `[tool.spark-git]` (or `[tool.spark-git.sub]`) header: a pyproject.toml without one is never parsed.
SPARK_TABLE = re.compile(r'^\s*\[\s*tool\s*\.\s*(?:"spark-git"|spark-git)\s*(?:\.[^\]]*)?\]', re.M)
_ROOT_LINE = re.compile(r"^\s*tasks_root\s*=\s*[\"']([^\"'\n]+)[\"']", re.M)
_BASE_LINE = re.compile(r"^\s*base_branch\s*=\s*[\"']([^\"'\n]+)[\"']", re.M)


def head_branch(common: Path) -> str:
    """The main worktree's branch, from HEAD itself ("main" when detached or unreadable)."""
    try:
        head = (common / "HEAD").read_text().strip()
    except OSError:
        return "main"
    return head[len("ref: refs/heads/"):] if head.startswith("ref: refs/heads/") else "main"


def tip(common: Path, branch: str) -> str | None:
    """The branch's commit from the ref files (loose, then packed); None when neither has it."""
    try:
        return (common / "refs" / "heads" / branch).read_text().strip() or None
    except OSError:
        pass
    try:
        packed = (common / "packed-refs").read_text()
    except OSError:
        return None
    m = re.search(rf"^([0-9a-f]{{40,64}}) refs/heads/{re.escape(branch)}$", packed, re.M)
    return m.group(1) if m else None


def tasks_root(main: Path, common: Path) -> tuple[str | None, str | None]:
    """(tasks_root, error) as committed on the base branch; error when that config does not parse."""
    start = head_branch(common)
    try:
        cached = json.loads((common / "spark" / CACHE).read_text())
        if cached.get("from") == start and cached.get("tip") and cached["tip"] == tip(common, cached["branch"]):
            root = cached.get("tasks_root")
            return (root if isinstance(root, str) and root else None), None
    except (OSError, ValueError, KeyError, AttributeError):
        pass
    root, base, error = _read(main, start)
    branch = base if base and base != start and error is None else start
    if branch != start:
        root, _, error = _read(main, branch)
    if error is None:  # the next call reads it back without git (best effort: a sandbox may deny the write)
        write_cache(common, {"from": start, "branch": branch, "tip": tip(common, branch)}, root)
    return root, error


def write_cache(common: Path, key: dict[str, str | None], root: object) -> None:
    """Records the committed tasks_root for `key` (the main worktree's branch, the base branch, its tip)."""
    import os

    entry = {**key, "tasks_root": root if isinstance(root, str) and root else None}
    path = common / "spark" / CACHE
    try:
        if path.is_file() and json.loads(path.read_text()) == entry:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{CACHE}.{os.getpid()}")
        tmp.write_text(json.dumps(entry))
        os.replace(tmp, path)
    except (OSError, ValueError):
        pass


def _read(main: Path, branch: str) -> tuple[str | None, str | None, str | None]:
    """(tasks_root, base_branch, error) of the config committed on `branch` (one git process per file, side by side)."""
    got = gitlite.run_all(str(main), [["cat-file", "blob", f"refs/heads/{branch}:{n}"] for n in (DEDICATED, PYPROJECT)])
    ded = got[0][1] if got[0][0] == 0 else None
    pp = got[1][1] if got[1][0] == 0 else None
    return parse(ded, pp, f"refs/heads/{branch}:")


def parse(ded: str | None, pp: str | None, where: str) -> tuple[str | None, str | None, str | None]:
    """(tasks_root, base_branch, error) from the config files' texts; `.spark-git.toml` wins."""
    text, name = (ded, DEDICATED) if ded is not None else (pp, PYPROJECT)
    if text is None or (name == PYPROJECT and not SPARK_TABLE.search(text)):
        return None, None, None  # a pyproject without spark-git's table: not ours to parse
    import tomllib  # only when there is a config to read: it costs start-up time

    try:
        data = tomllib.loads(text)
    except ValueError as e:
        m, b = _ROOT_LINE.search(text), _BASE_LINE.search(text)
        return (m.group(1) if m else None), (b.group(1) if b else None), f"{where}{name} is not valid TOML ({e})"
    if name == PYPROJECT:
        data = data.get("tool", {}).get("spark-git", {})
    root, base = data.get("tasks_root"), data.get("base_branch")
    return (root if isinstance(root, str) and root else None), (base if isinstance(base, str) else None), None
