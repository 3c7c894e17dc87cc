"""Will Gemini CLI (0.61) run spark-git's hooks in a worktree, beyond the hooks being in a settings
file? It runs no hook at all (the user's included) in a folder it does not trust, and none when
`hooksConfig.enabled` is false in any settings layer it reads, nor a hook whose command is listed in
`hooksConfig.disabled`. Trust as Gemini decides it: `GEMINI_RESTRICTED_MODE=true` or
`GEMINI_CLI_TRUST_WORKSPACE=false` distrust, `GEMINI_CLI_TRUST_WORKSPACE=true` trusts,
`security.folderTrust.enabled: false` trusts everything, else the longest rule of
`~/.gemini/trustedFolders.json` that holds the folder (`TRUST_PARENT`: its parent). A folder no rule
holds is not trusted yet: headless Gemini refuses to start there (exit 55), an interactive session
asks and, if refused, runs without hooks. Settings layers, later wins: system defaults, user,
workspace (`<cwd>/.gemini/settings.json`, trusted folders only), system. Standard library only."""

from __future__ import annotations

import json
import os
from pathlib import Path

from spark_git.clients.jsonhooks import is_ours

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

SUBDIRECTORY = ("Gemini CLI reads project settings only from the folder a session starts in: a Gemini session started in a "
                "subdirectory of an agent worktree runs none of spark-git's project hooks; "
                "`spark-git hooks install --client gemini --scope user` reaches every session")


def gemini_home(env: Mapping[str, str]) -> Path:
    return Path(env.get("GEMINI_CLI_HOME") or os.path.expanduser("~")) / ".gemini"


def _read(path: Path) -> dict[str, Any]:
    """A settings file as Gemini reads it (`//` and `/* */` comments allowed); {} when absent or unreadable."""
    try:
        data = json.loads(_strip_comments(path.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _strip_comments(text: str) -> str:
    out, i, n, in_str = [], 0, len(text), False
    while i < n:
        ch = text[i]
        if in_str:
            out.append(ch)
            if ch == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 1
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
            out.append(ch)
        elif text.startswith("//", i):
            i = text.find("\n", i)
            i = n if i < 0 else i
            continue
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
            continue
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def _get(d: dict[str, Any], *keys: str) -> Any:
    for k in keys:
        d = d.get(k) if isinstance(d, dict) else None  # type: ignore[assignment]
    return d


def _system(env: Mapping[str, str]) -> tuple[Path, Path]:
    system = Path(env.get("GEMINI_CLI_SYSTEM_SETTINGS_PATH") or "/etc/gemini-cli/settings.json")
    defaults = Path(env.get("GEMINI_CLI_SYSTEM_DEFAULTS_PATH") or system.parent / "system-defaults.json")
    return system, defaults


def untrusted(worktree: Path, env: Mapping[str, str], layers: list[tuple[str, dict[str, Any]]], hint: Path | None) -> str | None:
    """Why Gemini would not trust `worktree` (None: it does); `hint`: the folder the fix proposes to trust."""
    if env.get("GEMINI_RESTRICTED_MODE") == "true" or env.get("GEMINI_CLI_TRUST_WORKSPACE") == "false":
        return "GEMINI_RESTRICTED_MODE / GEMINI_CLI_TRUST_WORKSPACE=false: Gemini trusts no folder"
    if env.get("GEMINI_CLI_TRUST_WORKSPACE") == "true":
        return None
    enabled = [v for _, d in layers if (v := _get(d, "security", "folderTrust", "enabled")) is not None]
    if enabled and enabled[-1] is False:
        return None
    rules_file = Path(env.get("GEMINI_CLI_TRUSTED_FOLDERS_PATH") or gemini_home(env) / "trustedFolders.json")
    level = _trust_level(os.path.realpath(worktree), _read(rules_file))
    if level in ("TRUST_FOLDER", "TRUST_PARENT"):
        return None
    what = "distrusts it" if level == "DO_NOT_TRUST" else "has not been told to trust it"
    return (f"Gemini CLI {what} ({rules_file}) and runs no hooks in an untrusted folder (headless, it does not start): "
            f'trust the folder or one above it, e.g. "{hint or worktree}": "TRUST_FOLDER" in that file, or answer Gemini\'s trust prompt')


def _trust_level(location: str, rules: dict[str, Any]) -> str | None:
    best, level = -1, None
    for rule, lvl in rules.items():
        base = os.path.dirname(rule) if lvl == "TRUST_PARENT" else rule
        real = os.path.realpath(base)
        if (location == real or location.startswith(real.rstrip("/") + "/")) and len(rule) > best:
            best, level = len(rule), lvl
    return level if isinstance(level, str) else None


def problem(worktree: Path, env: Mapping[str, str], settings_rel: Path, hint: Path | None = None) -> str | None:
    """Why Gemini would not run spark-git's hooks in a session started in `worktree` (None: it would);
    `hint`: the folder an untrusted worktree's fix proposes to trust (the tasks root holds every agent's)."""
    system, defaults = _system(env)
    user = gemini_home(env) / "settings.json"
    outer = [(str(defaults), _read(defaults)), (str(user), _read(user)), (str(system), _read(system))]
    why = untrusted(worktree, env, outer, hint)
    if why:
        return why
    ws = worktree / settings_rel
    layers = [outer[0], outer[1], (str(ws), _read(ws)), outer[2]]
    switch = [(path, v) for path, d in layers if isinstance(v := _get(d, "hooksConfig", "enabled"), bool)]
    if switch and switch[-1][1] is False:  # the last layer that sets it wins
        return f"hooksConfig.enabled is false in {switch[-1][0]}: Gemini CLI runs no hooks; remove it"
    for path, d in layers:
        listed = _get(d, "hooksConfig", "disabled")
        if isinstance(listed, list) and any(is_ours(x) for x in listed):
            return f"hooksConfig.disabled in {path} lists spark-git's hook: Gemini CLI skips it; remove it from the list"
    return None


def warning(worktrees: list[Path], env: Mapping[str, str], settings_rel: Path) -> str | None:
    """One line for `start`/`status` when Gemini would skip spark-git's hooks in some of `worktrees`
    (those that have them): how many, and the first reason."""
    found = [(w, why) for w in worktrees if (why := problem(w, env, settings_rel))]
    if not found:
        return None
    return (f"{len(found)} worktree(s) will not run spark-git's gemini hooks ({', '.join(str(w) for w, _ in found[:3])}"
            f"{', …' if len(found) > 3 else ''}): {found[0][1]} (`spark-git hooks check` has the fix for each)")
