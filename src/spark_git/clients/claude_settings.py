"""`spark-git hooks install|uninstall`: spark-git's entries in Claude Code's settings file, merged
with what is there (other hooks and settings are never dropped), idempotent; uninstall removes only
spark-git's entries (and the containers it emptied)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from spark_git.core.errors import BadInput
from spark_git.state.files import write_text_atomic

PRE_TOOL_USE = "spark-git hook pre-tool-use"
SESSION_START = "spark-git hook session-start"
MATCHER = "Write|Edit|MultiEdit|NotebookEdit|Bash"
OURS = (PRE_TOOL_USE, SESSION_START)
SCOPES = {"project": "settings.json", "local": "settings.local.json"}


class HooksData(BaseModel):
    path: str
    scope: str
    changed: bool
    entries: list[str]  # event: command, as installed (or removed)
    removed_file: bool = False


def settings_path(root: Path, scope: str) -> Path:
    if scope not in SCOPES:
        raise BadInput(f"bad --scope {scope!r}: use project (.claude/settings.json) or local (.claude/settings.local.json)")
    return root / ".claude" / SCOPES[scope]


def _load(path: Path) -> dict[str, Any]:
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


def _has(groups: list, command: str) -> bool:
    return any(isinstance(g, dict) and any(isinstance(h, dict) and h.get("command") == command for h in g.get("hooks") or []) for g in groups)


def _save(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, json.dumps(data, indent=2) + "\n")


def install(root: Path, scope: str = "project") -> HooksData:
    path = settings_path(root, scope)
    data = _load(path)
    hooks = data.setdefault("hooks", {})
    wanted = [
        ("PreToolUse", {"matcher": MATCHER, "hooks": [{"type": "command", "command": PRE_TOOL_USE}]}, PRE_TOOL_USE),
        ("SessionStart", {"hooks": [{"type": "command", "command": SESSION_START}]}, SESSION_START),
    ]
    changed = False
    for event, group, cmd in wanted:
        groups = hooks.setdefault(event, [])
        if not _has(groups, cmd):
            groups.append(group)
            changed = True
    if changed:
        _save(path, data)
    return HooksData(path=str(path), scope=scope, changed=changed, entries=[f"{e}: {c}" for e, _, c in wanted])


def uninstall(root: Path, scope: str = "project") -> HooksData:
    path = settings_path(root, scope)
    if not path.exists():
        return HooksData(path=str(path), scope=scope, changed=False, entries=[])
    data = _load(path)
    hooks = data.get("hooks")
    removed: list[str] = []
    if isinstance(hooks, dict):
        for event in list(hooks):
            kept_groups = []
            for g in hooks[event]:
                if not isinstance(g, dict) or not isinstance(g.get("hooks"), list):
                    kept_groups.append(g)
                    continue
                kept = [h for h in g["hooks"] if not (isinstance(h, dict) and h.get("command") in OURS)]
                removed += [f"{event}: {h['command']}" for h in g["hooks"] if isinstance(h, dict) and h.get("command") in OURS]
                if kept:
                    kept_groups.append({**g, "hooks": kept})
                elif not g["hooks"]:
                    kept_groups.append(g)  # an empty group that was not ours
            if kept_groups:
                hooks[event] = kept_groups
            else:
                del hooks[event]
        if not hooks:
            del data["hooks"]
    if not removed:
        return HooksData(path=str(path), scope=scope, changed=False, entries=[])
    if not data:
        path.unlink()  # the file held nothing but spark-git's entries
        return HooksData(path=str(path), scope=scope, changed=True, entries=removed, removed_file=True)
    _save(path, data)
    return HooksData(path=str(path), scope=scope, changed=True, entries=removed)
