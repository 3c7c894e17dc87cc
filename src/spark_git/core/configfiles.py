"""Where configuration comes from: the repository's file (`.spark-git.toml`, or `[tool.spark-git]` in
pyproject.toml), then the person's own `$XDG_CONFIG_HOME/spark-git/config.toml` and `SPARK_GIT_*`
environment variables, which may set personal keys only (how they like to work, never what the
repository requires: gates, risk, protocol, approval come from the repository alone)."""

from __future__ import annotations

import os
import re
import shlex
import sys
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from spark_git.core.errors import BadInput
from spark_git.core.hookconfig import DEDICATED, PYPROJECT, SPARK_TABLE

# Personal keys (dotted) and their environment variables: SPARK_GIT_ + the key, dots as underscores.
PERSONAL = ("stale_minutes", "queue.wait_s", "queue.poll_s", "ports.start", "ports.end")
ENV_PREFIX = "SPARK_GIT_"
_HEADER = re.compile(r"^\s*\[", re.M)


def warn(text: str) -> None:
    # stderr: --json output (stdout) stays one envelope
    print(f"spark-git: warning: {text}", file=sys.stderr)





def worktree_texts(main: Path) -> dict[str, str | None]:
    """The config files as they are in the main worktree (None: absent). A `.spark-git.toml` that is
    not a file (a directory) is bad input naming it, not a config that silently turns gates off."""
    out: dict[str, str | None] = {}
    for name in (DEDICATED, PYPROJECT):
        path = main / name
        if path.exists() and not path.is_file():
            raise BadInput(f"{path} is not a file: the config is a TOML file", hint="remove it (spark-git reads the committed config)",
                           next=[f"git -C {shlex.quote(str(main))} clean -d -i -- {name}"], details={"key": name})
        out[name] = path.read_text() if path.is_file() else None
    return out


def repo_section(main: Path, texts: dict[str, str | None] | None = None, where: str = "") -> tuple[dict[str, Any] | None, str | None, str]:
    """(data, source, key prefix for messages) of the repository's config; (None, None, "") if none.
    `texts` (file name → content) default to the main worktree's files; `where` names their origin
    ("refs/heads/main:" for the committed ones)."""
    if texts is None:
        texts = worktree_texts(main)
    dedicated = f"{where}{DEDICATED}" if where else str(main / DEDICATED)
    pyproject = f"{where}{PYPROJECT}" if where else str(main / PYPROJECT)
    if texts.get(DEDICATED) is not None:
        try:
            return tomllib.loads(texts[DEDICATED] or ""), dedicated, ""
        except tomllib.TOMLDecodeError as e:
            raise BadInput(f"cannot parse {dedicated}: {e}") from e
    text = texts.get(PYPROJECT)
    if text is None or not SPARK_TABLE.search(text):
        return None, None, ""  # no [tool.spark-git]: the rest of pyproject.toml is not ours to parse
    source = f"{pyproject} [tool.spark-git]"
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        doc = _table_alone(pyproject, text, e)
    section = doc.get("tool", {}).get("spark-git")
    return (section, source, "tool.spark-git.") if isinstance(section, dict) else (None, None, "")


def _table_alone(pyproject: str, text: str, err: Exception) -> dict[str, Any]:
    """pyproject.toml does not parse: its [tool.spark-git] tables alone, if they do (the error is
    elsewhere: warned about, not ours to stop every command for)."""
    heads = list(_HEADER.finditer(text))
    parts = []
    for i, h in enumerate(heads):
        if SPARK_TABLE.match(text, h.start()):
            parts.append(text[h.start(): heads[i + 1].start() if i + 1 < len(heads) else len(text)])
    try:
        doc = tomllib.loads("".join(parts))
    except tomllib.TOMLDecodeError as e:
        raise BadInput(f"cannot parse [tool.spark-git] in {pyproject}: {e}") from e
    warn(f"{pyproject} is not valid TOML ({err}); its [tool.spark-git] table parses and is used")
    return doc


def personal_path(env: Mapping[str, str]) -> Path:
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME") or Path.home()) / ".config")
    return Path(base) / "spark-git" / "config.toml"


def personal(env: Mapping[str, str]) -> tuple[dict[str, Any], list[str]]:
    """The personal keys of the person's config file and environment, as nested data; and where they came from."""
    out: dict[str, Any] = {}
    sources: list[str] = []
    path = personal_path(env)
    if path.is_file():
        try:
            flat = _flatten(tomllib.loads(path.read_text()))
        except tomllib.TOMLDecodeError as e:
            raise BadInput(f"cannot parse {path}: {e}") from e
        for key, value in flat.items():
            if key in PERSONAL:
                _set(out, key, value)
            else:
                warn(f"{path}: {key} is not a personal key (personal: {', '.join(PERSONAL)}); ignored, the repository decides it")
        sources.append(str(path))
    for name, raw in env.items():
        if not name.startswith(ENV_PREFIX):
            continue
        pkey = next((k for k in PERSONAL if ENV_PREFIX + k.replace(".", "_").upper() == name), None)
        if pkey is None:
            warn(f"{name} is not a personal key (personal: {', '.join(ENV_PREFIX + k.replace('.', '_').upper() for k in PERSONAL)}); ignored")
            continue
        _set(out, pkey, _value(raw))
        sources.append(name)
    return out, sources


def _value(raw: str) -> Any:
    """An environment value read as TOML (`45` a number, `true` a bool), else the text itself: the
    config's types are strict, as in the file."""
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw


def _flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in data.items():
        if isinstance(v, dict) and v:
            out.update(_flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def _set(data: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, last = dotted.split(".")
    for p in parents:
        data = data.setdefault(p, {})
    data[last] = value


def merged(repo: dict[str, Any] | None, mine: dict[str, Any]) -> dict[str, Any]:
    """The repository's data with the personal keys over it."""
    out = {k: (dict(v) if isinstance(v, dict) else v) for k, v in (repo or {}).items()}
    for k, v in mine.items():
        if isinstance(v, dict):
            out[k] = {**(out.get(k) or {}), **v}
        else:
            out[k] = v
    return out


def environ() -> Mapping[str, str]:
    return os.environ
