"""Codex CLI runs a hook only when the user's Codex config trusts it (measured with 0.169; what its
`/hooks` screen records): `[hooks.state."<hooks.json path>:<event>:<group>:<handler>"] trusted_hash =
"sha256:…"`, the hash being SHA-256 over the compact, key-sorted JSON of the hook's normalized
identity (event label, matcher, the one handler with Codex's defaults: timeout 600, async false).
A project's `.codex` is read at all only when `[projects."<repo root>"] trust_level = "trusted"`;
in a linked worktree Codex takes the hooks from the main checkout's `.codex/hooks.json` and loads
them only if the worktree has a `.codex` directory of its own.

The user's config is TOML: read with tomllib, edited as text (only the tables spark-git owns), and
parsed again before it is written, so a file spark-git cannot edit safely is refused, never mangled."""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from pathlib import Path
from typing import Any

from spark_git.clients import jsonhooks
from spark_git.clients.codex import home
from spark_git.core.errors import BadInput
from spark_git.state.files import write_text_atomic

DEFAULT_TIMEOUT = 600  # seconds: Codex's default, part of the hashed identity
LABELS = {"PreToolUse": "pre_tool_use", "SessionStart": "session_start"}


def config_path() -> Path:
    return home() / "config.toml"


def entry_hash(label: str, matcher: str | None, handler: dict[str, Any]) -> str:
    """The hash Codex computes for one command hook (its `currentHash` in `hooks/list`)."""
    h: dict[str, Any] = {"type": "command", "command": handler.get("command"), "async": bool(handler.get("async", False)),
                         "timeout": max(int(handler.get("timeout") or DEFAULT_TIMEOUT), 1)}
    if handler.get("statusMessage") is not None:
        h["statusMessage"] = handler["statusMessage"]
    identity: dict[str, Any] = {"event_name": label, "hooks": [h]}
    if matcher is not None:
        identity["matcher"] = matcher
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def ours(hooks_json: Path) -> dict[str, str]:
    """Trust key -> hash of every spark-git entry in a hooks.json ({} when it has none)."""
    try:
        data = json.loads(hooks_json.read_text())
    except (OSError, ValueError):
        return {}
    hooks = data.get("hooks") if isinstance(data, dict) else None
    out: dict[str, str] = {}
    for event, label in LABELS.items():
        groups = hooks.get(event) if isinstance(hooks, dict) else None
        for gi, g in enumerate(groups if isinstance(groups, list) else []):
            handlers = g.get("hooks") if isinstance(g, dict) else None
            for hi, h in enumerate(handlers if isinstance(handlers, list) else []):
                if isinstance(h, dict) and jsonhooks.is_ours(h.get("command")):
                    matcher = g.get("matcher") if isinstance(g.get("matcher"), str) else None
                    out[f"{hooks_json}:{label}:{gi}:{hi}"] = entry_hash(label, matcher, h)
    return out


def read_config(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text()) if path.exists() else {}
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise BadInput(f"{path} is not valid TOML ({e}); fix it first, spark-git will not overwrite it") from e


def _state(config: dict[str, Any], key: str) -> dict[str, Any]:
    hooks = config.get("hooks")
    states = hooks.get("state") if isinstance(hooks, dict) else None
    st = states.get(key) if isinstance(states, dict) else None
    return st if isinstance(st, dict) else {}


def project_trust(config: dict[str, Any], root: Path) -> str | None:
    projects = config.get("projects")
    p = projects.get(str(root)) if isinstance(projects, dict) else None
    level = p.get("trust_level") if isinstance(p, dict) else None
    return level if isinstance(level, str) else None


def problems(hooks_json: Path, project: Path | None) -> list[str]:
    """Why Codex would skip spark-git's hooks in `hooks_json` ([] when it runs every one of them);
    `project`: the repository root that must be trusted (None for the user's own hooks.json)."""
    path = config_path()
    try:
        config = read_config(path)
    except BadInput as e:
        return [str(e)]
    out = []
    features = config.get("features")
    off = [f for f in ("hooks", "codex_hooks") if isinstance(features, dict) and features.get(f) is False]
    if off:
        out.append(f"Codex's hooks are switched off ({path}: [features] {off[0]} = false)")
    if project is not None and project_trust(config, project) != "trusted":
        out.append(f"Codex does not trust the project {project} ({path}: [projects.\"{project}\"] trust_level), so it ignores its .codex")
    for key, want in ours(hooks_json).items():
        st = _state(config, key)
        if st.get("enabled") is False:
            out.append(f"Codex has the hook {key} disabled ({path})")
        elif st.get("trusted_hash") != want:
            what = "is not trusted" if "trusted_hash" not in st else "was changed since it was trusted"
            out.append(f"Codex skips the hook {key}: it {what} ({path} [hooks.state])")
    return out


def trust(hooks_json: Path, project: Path | None) -> list[str]:
    """spark-git's entries of `hooks_json` trusted in the user's Codex config (and the project, unless
    the user set its trust level already); the keys written ([] when all were in place)."""
    path = config_path()
    config = read_config(path)
    text = path.read_text() if path.exists() else ""
    done = []
    if project is not None and project_trust(config, project) is None:
        text = _set_table(text, f"projects.{_quote(str(project))}", f"trust_level = {_quote('trusted')}")
        done.append(f"project {project}")
    for key, want in ours(hooks_json).items():
        if _state(config, key).get("trusted_hash") != want:
            text = _set_table(text, f"hooks.state.{_quote(key)}", f"trusted_hash = {_quote(want)}")
            done.append(key)
    if done:
        _write(path, text)
    return done


def untrust(hooks_json: Path) -> list[str]:
    """The trust tables of spark-git's entries in `hooks_json` taken out of the user's Codex config."""
    path = config_path()
    if not path.exists():
        return []
    read_config(path)
    text = path.read_text()
    keys = [k for k in ours(hooks_json) if _header(f"hooks.state.{_quote(k)}").search(text)]
    for k in keys:
        text = _header(f"hooks.state.{_quote(k)}").sub("", text, count=1)
    if keys:
        _write(path, text)
    return keys


def _quote(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)  # a TOML basic string: JSON's escapes are TOML's


def _header(table: str) -> re.Pattern[str]:
    """`[table]` and its body up to the next table header (the text spark-git wrote)."""
    return re.compile(rf"(?m)^\[{re.escape(table)}\][ \t]*\n(?:(?!\[).*\n?)*")


def _set_table(text: str, table: str, body: str) -> str:
    block = f"[{table}]\n{body}\n"
    if _header(table).search(text):
        return _header(table).sub(lambda _: block + "\n", text, count=1)
    sep = "" if text.endswith("\n") else "\n"
    return f"{text}{sep}\n{block}" if text else block


def _write(path: Path, text: str) -> None:
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:  # e.g. the same table written another way by hand
        raise BadInput(f"{path}: spark-git cannot add its Codex trust entries without breaking the file ({e}); "
                       "trust the hooks in Codex's /hooks screen instead") from e
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, text)
