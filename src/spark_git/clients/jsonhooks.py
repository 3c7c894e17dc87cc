"""spark-git's entries in a Claude-shaped hooks object (`{"hooks": {Event: [{"matcher", "hooks":
[{"type": "command", "command"}]}]}}`), which Claude Code, Codex CLI and Gemini CLI all read:
merged in without touching anything else, upgraded in place, removed leaving the rest as it was.
Standard library only (the hook's settings warnings read it); the file I/O is clients/settings.py."""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (it costs the hook milliseconds)
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    Found = tuple[dict[str, Any], dict[str, Any]]


class Wanted:
    """One spark-git hook entry: the event it answers, its matcher (None: every call) and command."""

    __slots__ = ("command", "event", "extra", "matcher")

    def __init__(self, event: str, command: str, matcher: str | None = None, extra: dict[str, Any] | None = None) -> None:
        self.event = event
        self.command = command
        self.matcher = matcher
        self.extra = extra or {}  # client-specific keys of the entry (Claude Code: onFailure)

    def entry(self) -> dict[str, Any]:
        return {"type": "command", "command": self.command, **self.extra}

    def group(self) -> dict[str, Any]:
        g: dict[str, Any] = {"matcher": self.matcher} if self.matcher is not None else {}
        g["hooks"] = [self.entry()]
        return g


# Codex 0.169's guard before the wrapper below (it covered only `spark-git` missing from PATH): no
# longer written, still recognised and upgraded.
GUARD = ("command -v {exe} >/dev/null 2>&1 || {{ echo 'spark-git hook: {exe} is not on PATH, so this tool call "
         "cannot be checked and is refused' >&2; exit 2; }}; exec ")

# A client that lets a tool call through when its hook fails (Gemini 0.61 and Codex 0.169, measured: an
# exit 1 such as Python's on a broken install, an exit 2 with no output, a signal; Codex also a command
# that cannot start) runs spark-git's command inside this POSIX-sh wrapper (`Facts.wrap`). spark-git's
# stdout goes straight through; its stderr and exit status are kept. Exit 0, or 2 with a reason on
# stderr, pass as they are; anything else blocks: exit 2 with the reason on stderr (Codex reads it) and
# on stdout (Gemini reads stdout first; appended to whatever a crash left there, the text cannot parse
# as a JSON allow).
WRAP = ('{{ e=$({cmd} 2>&1 >&3 3>&-); r=$?; }} 3>&1; '
        'if [ "$r" = 0 ] || {{ [ "$r" = 2 ] && [ -n "$e" ]; }}; then [ -z "$e" ] || printf \'%s\\n\' "$e" >&2; exit "$r"; fi; '
        'm="spark-git: blocked: the spark-git hook failed (exit status $r${{e:+: $e}}), so this tool call cannot be checked; '
        'fix spark-git (spark-git doctor) before going on"; printf \'%s\\n\' "$m"; printf \'%s\\n\' "$m" >&2; exit 2')
_WRAP_HEAD = WRAP.split("{cmd}", 1)[0].replace("{{", "{")
_WRAP_MARK = " 2>&1 >&3 3>&-);"  # where the command ends in every version of the wrapper


def wrapped(command: str) -> str:
    """`command` (or the spark-git command of an older guarded or wrapped entry, its spelling of
    spark-git kept) inside WRAP."""
    return WRAP.format(cmd=unguarded(command))


def guarded(command: str) -> str:
    """`command` behind GUARD (idempotent): how older Codex entries were written."""
    plain = unguarded(command)
    return GUARD.format(exe=plain.split(" ", 1)[0]) + plain


def unguarded(command: str) -> str:
    """The spark-git command a guarded or wrapped entry runs (any other text as it is)."""
    command = command.strip()
    if command.startswith(_WRAP_HEAD) and _WRAP_MARK in command:
        return command[len(_WRAP_HEAD) :].split(_WRAP_MARK, 1)[0].strip()
    if command.startswith("command -v ") and "; exec " in command:
        return command.rsplit("; exec ", 1)[1].strip()
    return command


def is_guarded(command: str) -> bool:
    return unguarded(command) != command.strip()


def rewrapped(wanted: str, command: str) -> str:
    """`command`'s spark-git command (its spelling kept) in the form `wanted` has: wrapped, guarded or plain."""
    plain = unguarded(command)
    if wanted.strip().startswith(_WRAP_HEAD):
        return wrapped(plain)
    return guarded(plain) if is_guarded(wanted) else plain


def is_ours(command: object, wanted: tuple[str, ...] | None = None) -> bool:
    """`spark-git hook …` as installed (one of `wanted`, or any when None; wrapped, guarded or not), or with
    spark-git named by an absolute path."""
    if not isinstance(command, str):
        return False
    if wanted is not None:
        wanted = tuple(unguarded(w) for w in wanted)
    exe, _, rest = unguarded(command).partition(" ")
    if os.path.basename(exe) != "spark-git":
        return False
    norm = f"spark-git {' '.join(rest.split())}"
    return norm.startswith("spark-git hook ") if wanted is None else norm in wanted


def merge(hooks: dict[str, Any], wanted: list[Wanted]) -> bool:
    """spark-git's entries added to `hooks` in place (once); True when anything changed."""
    changed = False
    for w in wanted:
        groups = hooks.setdefault(w.event, [])
        found = find(groups, w.command)
        if found is None:
            groups.append(w.group())
            changed = True
        else:
            changed = _upgrade(groups, found, w) or changed
    return changed


def find(groups: list[Any], command: str) -> Found | None:
    """(group, hook entry) of spark-git's `command` in an event's groups."""
    for g in groups:
        for h in (g.get("hooks") or []) if isinstance(g, dict) else []:
            if isinstance(h, dict) and is_ours(h.get("command"), (command,)):
                return g, h
    return None


def has(hooks: object, event: str) -> bool:
    """Some spark-git entry answers `event` in this hooks object."""
    groups = hooks.get(event) if isinstance(hooks, dict) else None
    return isinstance(groups, list) and any(
        isinstance(g, dict) and any(isinstance(h, dict) and is_ours(h.get("command")) for h in g.get("hooks") or []) for g in groups
    )


def file_has(settings: Path, event: str) -> bool:
    """A settings file holds spark-git's hook for `event`; False when it cannot be read."""
    import json

    try:
        data = json.loads(settings.read_text())
    except (OSError, ValueError):
        return False
    return has(data.get("hooks") if isinstance(data, dict) else None, event)


def _upgrade(groups: list[Any], found: Found, w: Wanted) -> bool:
    """An older or hand-made spark-git entry brought up to date: the full matcher (a narrower one
    lets the other tools through), the wrapper where the client wants one (an older one replaced), and the client's
    extra keys. The user's command path is kept; a
    group shared with other hooks keeps its matcher, ours moves to a group of its own."""
    group, hook = found
    changed = False
    if w.matcher is not None and group.get("matcher") != w.matcher:
        if len(group["hooks"]) == 1:
            group["matcher"] = w.matcher
        else:
            group["hooks"].remove(hook)
            groups.append({"matcher": w.matcher, "hooks": [hook]})
        changed = True
    if is_guarded(w.command) and hook["command"] != rewrapped(w.command, hook["command"]):
        hook["command"] = rewrapped(w.command, hook["command"])  # the user's spelling of spark-git kept
        changed = True
    for k, v in w.extra.items():
        if hook.get(k) != v:
            hook[k] = v
            changed = True
    return changed


def remove(hooks: dict[str, Any]) -> list[str]:
    """Drops spark-git's hook entries from `hooks` in place (and the groups and events they emptied);
    returns them as "event: command"."""
    removed: list[str] = []
    for event in list(hooks):
        kept_groups = []
        for g in hooks[event]:
            if not isinstance(g, dict) or not isinstance(g.get("hooks"), list):
                kept_groups.append(g)
                continue
            ours = [h for h in g["hooks"] if isinstance(h, dict) and is_ours(h.get("command"))]
            kept = [h for h in g["hooks"] if h not in ours]
            removed += [f"{event}: {h['command']}" for h in ours]
            if kept:
                kept_groups.append(g if not ours else {**g, "hooks": kept})
            elif not g["hooks"]:
                kept_groups.append(g)  # an empty group that was not ours
        if kept_groups or len(kept_groups) == len(hooks[event]):
            hooks[event] = kept_groups  # an event list the user left empty stays
        else:
            del hooks[event]
    return removed


def read_event(raw: str) -> dict[str, Any]:
    """A hook's stdin event as a JSON object (the clients' common shape); BadEvent when it is not one."""
    import json

    from spark_git.guard.calls import BadEvent

    try:
        event = json.loads(raw) if raw.strip() else {}
    except ValueError as e:
        raise BadEvent(f"stdin is not JSON ({e})") from e
    if not isinstance(event, dict):
        raise BadEvent("stdin is not a JSON object")
    return event
