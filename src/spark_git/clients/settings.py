"""Hook entries in a client's JSON settings file, for `spark-git hooks install|uninstall`: the file is
read refusing anything spark-git must not overwrite, and written atomically. Only the CLI imports
this (pydantic); client adapters import it inside install/uninstall."""

from __future__ import annotations

import copy
import json
import os
import stat
from pathlib import Path
from typing import Any

from spark_git.clients import jsonhooks, originals
from spark_git.core.errors import BadInput
from spark_git.core.model import Model
from spark_git.state.files import write_text_atomic


class HooksData(Model):
    path: str
    scope: str
    changed: bool
    entries: list[str]  # event: command, as installed (or removed)
    removed_file: bool = False
    client: str  # the registry name of the client whose file this is
    trusted: list[str] = []  # trust entries the client needs, written in (install) or taken out of (uninstall) its user config (Codex)


class HooksSetData(Model):
    """`hooks install|uninstall`: one settings file per client asked for."""

    changed: bool  # some file changed
    files: list[HooksData]
    sandbox: list[str] = []  # agent worktrees whose client sandbox settings (Claude Code's, Codex's) were written (install) or taken out (uninstall)
    instructions: list[str] = []  # the coordinator's instructions written or taken out (SKILL.md, AGENTS.md, GEMINI.md; project scope)


def scope_path(root: Path, client: str, files: dict[str, Path], scope: str) -> Path:
    """The settings file of `scope` (`files`: scope -> path relative to the repo root, or absolute for
    the user's own); BadInput naming the scopes the client has otherwise."""
    if scope not in files:
        raise BadInput(f"bad --scope {scope!r} for {client}: use " + " or ".join(f"{s} ({_shown(p)})" for s, p in files.items()))
    return files[scope] if files[scope].is_absolute() else root / files[scope]


def _shown(p: Path) -> str:
    home = Path(os.path.expanduser("~"))
    return "~/" + str(p.relative_to(home)) if p.is_relative_to(home) else str(p)


def install_file(path: Path, scope: str, client: str, wanted: list[jsonhooks.Wanted]) -> HooksData:
    """spark-git's entries merged into the hooks object of `path` (nothing else dropped); idempotent.
    The file's original text is remembered for uninstall (clients/originals.py)."""
    data = load(path)
    clean = not jsonhooks.remove(copy.deepcopy(data.get("hooks", {})))
    changed = jsonhooks.merge(data.setdefault("hooks", {}), wanted)
    if changed:
        before = originals.read_exact(path)
        save(path, data)
        originals.remember(path, before, originals.read_exact(path) or "", clean)
    return HooksData(path=str(path), scope=scope, changed=changed, entries=[f"{w.event}: {w.command}" for w in wanted], client=client)


def uninstall_file(path: Path, scope: str, client: str) -> HooksData:
    """The file as it was before install, byte for byte, while it is as install left it; else only
    spark-git's entries removed (and the containers that removal emptied; the file too if it held
    nothing else)."""
    if not path.exists():
        return HooksData(path=str(path), scope=scope, changed=False, entries=[], client=client)
    untouched, original = originals.original_if_untouched(path)
    data = load(path)
    hooks = data.get("hooks")
    removed = jsonhooks.remove(hooks) if isinstance(hooks, dict) else []
    originals.forget(path)
    if untouched and original is None:
        path.unlink()  # install created it
        return HooksData(path=str(path), scope=scope, changed=True, entries=removed, removed_file=True, client=client)
    if untouched and original is not None:
        write_exact(path, original)
        return HooksData(path=str(path), scope=scope, changed=True, entries=removed, client=client)
    if not removed:
        return HooksData(path=str(path), scope=scope, changed=False, entries=[], client=client)
    if isinstance(hooks, dict) and not hooks:
        del data["hooks"]
    if not data:
        path.unlink()  # the file held nothing but spark-git's entries
        return HooksData(path=str(path), scope=scope, changed=True, entries=removed, removed_file=True, client=client)
    save(path, data)
    return HooksData(path=str(path), scope=scope, changed=True, entries=removed, client=client)


def load(path: Path) -> dict[str, Any]:
    """The settings object ({} when the file is absent) whose "hooks" is an object of lists."""
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text() or "{}")
    except (ValueError, OSError) as e:
        raise BadInput(f"{path} is not valid JSON ({e}); fix it first, spark-git will not overwrite it") from e
    if not isinstance(data, dict):
        raise BadInput(f"{path} does not hold a JSON object; spark-git will not overwrite it")
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict) or any(not isinstance(v, list) for v in hooks.values()):
        raise BadInput(f"{path}: \"hooks\" is not an object of lists; spark-git will not overwrite it")
    return data


def _indent(text: str) -> int | str | None:
    """The indentation the file uses (so a rewrite changes only what it must); 2 for a new file."""
    for line in text.splitlines()[1:]:
        stripped = line.lstrip(" \t")
        if stripped and len(stripped) < len(line):
            ws = line[: len(line) - len(stripped)]
            return len(ws) if set(ws) == {" "} else ws
    return None if text.strip() else 2


def save(path: Path, data: dict[str, Any]) -> None:
    """Written atomically in the file's own style (indentation, line endings, final newline,
    non-ASCII kept as text), through a symlink to its target, with the file's mode kept."""
    old = originals.read_exact(path.resolve() if path.is_symlink() else path) or ""
    text = json.dumps(data, indent=_indent(old), ensure_ascii=False) + ("\n" if old.endswith("\n") or not old else "")
    write_exact(path, text.replace("\n", "\r\n") if "\r\n" in old else text)  # json.dumps escapes newlines in strings


def write_exact(path: Path, text: str) -> None:
    target = path.resolve() if path.is_symlink() else path
    mode = stat.S_IMODE(target.stat().st_mode) if target.exists() else None
    target.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(target, text)
    if mode is not None:
        os.chmod(target, mode)
