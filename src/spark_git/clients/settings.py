"""Hook entries in a client's JSON settings file, for `spark-git hooks install|uninstall`: the file is
read refusing anything spark-git must not overwrite, and written atomically. Only the CLI imports
this (pydantic); client adapters import it inside install/uninstall."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from spark_git.core.errors import BadInput
from spark_git.state.files import write_text_atomic


class HooksData(BaseModel):
    path: str
    scope: str
    changed: bool
    entries: list[str]  # event: command, as installed (or removed)
    removed_file: bool = False


def scope_file(scopes: dict[str, str], scope: str, usage: str) -> str:
    """The settings file name of `scope`; BadInput naming the choices (`usage`) otherwise."""
    if scope not in scopes:
        raise BadInput(f"bad --scope {scope!r}: {usage}")
    return scopes[scope]


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


def save(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, json.dumps(data, indent=2) + "\n")
