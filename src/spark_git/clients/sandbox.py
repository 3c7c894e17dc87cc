"""Claude Code's sandbox for agent sessions (issue 12, defence in depth behind the PreToolUse hook).

Written into each agent worktree's own `.claude/settings.local.json` (Claude Code reads it for a session
launched there; the coordinator's session, in the task or main worktree, is not affected): Bash may
write only the session's cwd — the agent worktree — by the OS sandbox, minus the files that switch
hooks off or redirect git/spark-git; `git` runs outside it (a commit writes the shared object store)
and stays under the hook's git policy. The file is kept out of git by one line in the common
`info/exclude` (git reads no per-worktree exclude file), so it never makes an agent worktree dirty.
The user's spark-git state directory (the approval and verdict keys) is kept from Bash by the sandbox's
denyRead and from the file tools, which run outside the sandbox, by `permissions.deny` rules.

`remove` gives the file back as it was (byte for byte while untouched, through clients/originals.py),
else drops only the `sandbox` key spark-git wrote (the user's earlier one put back)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from spark_git.clients import gitgrants, originals, registry, settings
from spark_git.clients.claude import SANDBOX
from spark_git.core.sshsig import state_dir
from spark_git.guard import writes
from spark_git.state.files import write_text_atomic

FILE = Path(SANDBOX.file)
EXCLUDE_NOTE = "# spark-git: agents' Claude Code sandbox settings (`spark-git hooks install`; kept out of git)"
EXCLUDE_LINE = f"/{SANDBOX.file}"


def denied() -> tuple[str, ...]:
    """What an agent may not write even inside its own worktree: what the hook guards (the clients'
    directories switch hooks off, .git and .spark-git.toml redirect git and spark-git)."""
    return (*registry.protected(), *writes.GUARDED_DIRS, *writes.GUARDED_FILES)


# Inside the sandbox, Claude Code 2.1.328 mounts /dev/null over these names at the worktree's root where
# they do not exist (its own write protections): git there would list them as files to add (`git add -A`
# fails: "can only add regular files"). Anchored at the root; tracked files are not affected. spark-git's
# denied() names are denied only where they exist (an ignored .codex would be copied into new worktrees).
MOUNTS_NOTE = "# spark-git: what Claude Code's sandbox mounts in an agent worktree (not files to add)"
MOUNTS = ("/.bash_profile", "/.bashrc", "/.gitconfig", "/.gitmodules", "/.idea", "/.mcp.json", "/.profile",
          "/.ripgreprc", "/.vscode", "/.zprofile", "/.zshrc", "/.claude/agents", "/.claude/commands")


Owned = tuple[tuple[Path, str | None], ...]  # a session's other worktrees (its subagents') and their branches


def wanted(worktree: Path, before: dict[str, Any] | None = None, branch: str | None = None,
           more: Owned = ()) -> dict[str, Any]:
    """The sandbox for an agent session in `worktree` on `branch` (None: the one checked out), with
    `more` (its subagents' worktrees and branches) writable too, over the one the file already had
    (its other keys kept, lists joined; spark-git's git entries replaced, they follow the common
    dir): on, no way out for a command, spark-git's files read-only, git's writes limited to the
    session's own worktrees and branches (clients/gitgrants.py), the user's spark-git state directory
    (the approval key, the approvers) unreadable."""
    sb: dict[str, Any] = json.loads(json.dumps(before)) if isinstance(before, dict) else {}
    real = os.path.realpath(worktree)
    sb.update(enabled=True, allowUnsandboxedCommands=False)
    sb["excludedCommands"] = _joined(sb.get("excludedCommands"), ["git"])
    fs = sb["filesystem"] if isinstance(sb.get("filesystem"), dict) else {}
    owned = [(worktree, branch), *more]
    allow, deny = gitgrants.grants([(Path(w), b) for w, b in owned])
    dirs = gitgrants.git_dirs(worktree)
    mine = f"/{dirs[1]}/" if dirs else None  # entries under the common dir are spark-git's, recomputed
    fs["allowWrite"] = _joined(_fresh(fs.get("allowWrite"), mine), [f"/{os.path.realpath(w)}" for w, _ in more] + [f"/{p}" for p in allow])
    fs["denyWrite"] = _joined(_fresh(fs.get("denyWrite"), mine), [f"/{r}/{d}" for r in [real, *(os.path.realpath(w) for w, _ in more)] for d in denied() if os.path.lexists(f"{r}/{d}")] + [f"/{p}" for p in deny])
    if not fs["allowWrite"]:
        del fs["allowWrite"]
    fs["denyRead"] = _joined(fs.get("denyRead"), kept_out())  # the human's approval key, the verdict keys (issue 23)
    sb["filesystem"] = fs
    return sb


def kept_out() -> list[str]:
    """The user's spark-git state directory (the approval key and the approvers, the verdict keys: issue
    23) as Claude Code's absolute paths (`//…`), as spelled and resolved."""
    d = state_dir()
    return [f"/{p}" for p in dict.fromkeys((os.path.abspath(d), os.path.realpath(d)))]


def deny_rules(dirs: list[str]) -> list[str]:
    """Permission rules for the file tools, which run outside the sandbox: Read (Claude Code applies it to
    its other reading tools too) and Edit (Write and Edit: the approvers file must not gain a key)."""
    return [f"{tool}({d}{tail})" for d in dirs for tool in ("Read", "Edit") for tail in ("", "/**")]


def _fresh(old: Any, mine: str | None) -> Any:
    """The list without spark-git's earlier git entries (paths of a common dir go stale as refs come and go)."""
    if not isinstance(old, list) or mine is None:
        return old
    return [x for x in old if not (isinstance(x, str) and x.startswith(mine))]


def _joined(old: Any, ours: list[str]) -> list[str]:
    have = [x for x in old if isinstance(x, str)] if isinstance(old, list) else []
    return have + [x for x in ours if x not in have]


def present(worktree: Path, branch: str | None = None, more: Owned = ()) -> bool:
    """The worktree's settings hold spark-git's sandbox for it, as the common dir is now."""
    try:
        data = json.loads((worktree / FILE).read_text())
    except (OSError, ValueError):
        return False
    sb = data.get("sandbox") if isinstance(data, dict) else None
    perms = data.get("permissions") if isinstance(data, dict) else None
    deny = perms.get("deny") if isinstance(perms, dict) else None
    return isinstance(sb, dict) and wanted(worktree, sb, branch, more) == sb and isinstance(deny, list) and set(deny_rules(kept_out())) <= set(deny)


def only_ours(worktree: Path) -> bool:
    """The file is one spark-git created and nobody changed since (it holds nothing of the user's)."""
    return originals.original_if_untouched(worktree / FILE) == (True, None)


def apply(worktree: Path, *, new: bool = False, branch: str | None = None, more: Owned = ()) -> bool:
    """spark-git's sandbox merged into the agent worktree's local settings; True when the file changed.
    `new`: a worktree just created, so any memo of its path is from an earlier task of that name.
    `branch`, `more`: as for `wanted`."""
    path = worktree / FILE
    if new:
        originals.forget(path)
    data = settings.load(path)
    sb = wanted(worktree, data.get("sandbox"), branch, more)
    perms = _with_dirs(data.get("permissions"), [os.path.realpath(w) for w, _ in more])
    perms["deny"] = _joined(perms.get("deny"), deny_rules(kept_out()))
    if data.get("sandbox") == sb and data.get("permissions") == perms:
        return False
    before = originals.read_exact(path)
    data["sandbox"] = sb
    data["permissions"] = perms
    settings.save(path, data)
    originals.remember(path, before, originals.read_exact(path) or "", True)
    return True


def _with_dirs(perms: Any, dirs: list[str]) -> dict[str, Any]:
    """`permissions` with the subagents' worktrees among its additionalDirectories: Claude Code pins
    `<common>/worktrees` read-only and gives back only the admin dirs of the session's own directories,
    so a subagent's git needs its worktree named there (allowWrite alone is not enough)."""
    out = json.loads(json.dumps(perms)) if isinstance(perms, dict) else {}
    if dirs:
        out["additionalDirectories"] = _joined(out.get("additionalDirectories"), dirs)
    return out


def remove(worktree: Path) -> bool:
    """The file as it was before `apply` (deleted if apply created it) while untouched; else only the
    `sandbox` key taken out (the one the original had put back; the file deleted if nothing is left)."""
    path = worktree / FILE
    if not path.exists():
        return False
    untouched, original = originals.original_if_untouched(path)
    prior = originals.recorded(path)
    originals.forget(path)
    if untouched:
        if original is None:
            path.unlink()
        else:
            settings.write_exact(path, original)
        return True
    data = settings.load(path)
    if "sandbox" not in data:
        return False
    _drop_dirs(data, data["sandbox"], _permissions_of(prior))
    old = _sandbox_of(prior)
    if old is None:
        del data["sandbox"]
    else:
        data["sandbox"] = old
    if data:
        settings.save(path, data)
    else:
        path.unlink()
    return True


def _drop_dirs(data: dict[str, Any], sb: Any, prior: dict[str, Any]) -> None:
    """The additionalDirectories `apply` added (the ones its sandbox also grants) and its deny rules (the
    ones of the directories its sandbox denies reading, unless the file had them before) taken out again."""
    fs = sb.get("filesystem") if isinstance(sb, dict) else None
    granted = {x[1:] for x in fs.get("allowWrite", [])} if isinstance(fs, dict) and isinstance(fs.get("allowWrite"), list) else set()
    hidden = [x for x in fs.get("denyRead", []) if isinstance(x, str)] if isinstance(fs, dict) and isinstance(fs.get("denyRead"), list) else []
    ours = set(deny_rules(hidden)) - set(prior.get("deny") or [])
    perms = data.get("permissions")
    if not isinstance(perms, dict):
        return
    for key, drop in (("additionalDirectories", granted), ("deny", ours)):
        if isinstance(perms.get(key), list):
            perms[key] = [d for d in perms[key] if d not in drop]
            if not perms[key]:
                del perms[key]
    if not perms:
        del data["permissions"]


def _permissions_of(text: str | None) -> dict[str, Any]:
    try:
        data = json.loads(text) if text else None
    except ValueError:
        return {}
    perms = data.get("permissions") if isinstance(data, dict) else None
    return perms if isinstance(perms, dict) else {}


def _sandbox_of(text: str | None) -> Any:
    try:
        data = json.loads(text) if text else None
    except ValueError:
        return None
    return data.get("sandbox") if isinstance(data, dict) else None


# -- keeping the file out of git --------------------------------------------------------------------


def exclude(common_dir: Path) -> bool:
    """spark-git's block in `<git-common-dir>/info/exclude` (every worktree reads that one); True when
    written. An older block (the settings line alone) is brought up to date."""
    path = common_dir / "info" / "exclude"
    text = originals.read_exact(path) or ""
    if _block() in text:
        return False
    text = _without_block(text)
    sep = "" if not text or text.endswith("\n") else "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, f"{text}{sep}{_block()}")
    return True


def unexclude(common_dir: Path) -> bool:
    """spark-git's block taken out of info/exclude again (only when spark-git added it)."""
    path = common_dir / "info" / "exclude"
    text = originals.read_exact(path)
    if text is None or EXCLUDE_NOTE not in text:
        return False
    write_text_atomic(path, _without_block(text))
    return True


def _block() -> str:
    return "".join(f"{x}\n" for x in (EXCLUDE_NOTE, EXCLUDE_LINE, MOUNTS_NOTE, *MOUNTS))


def _without_block(text: str) -> str:
    """The text minus spark-git's lines: the whole block, or the older two-line one."""
    for ours in (_block(), f"{EXCLUDE_NOTE}\n{EXCLUDE_LINE}\n"):
        if ours in text:
            return text.replace(ours, "", 1)
    return text
