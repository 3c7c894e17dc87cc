"""Claude Code's sandbox for agent sessions (issue 12, defence in depth behind the PreToolUse hook).

Written into each agent worktree's own `.claude/settings.local.json` (Claude Code reads it for a session
launched there; the coordinator's session, in the task or main worktree, is not affected): Bash may
write only the session's cwd — the agent worktree — by the OS sandbox, minus the files that switch
hooks off or redirect git/spark-git; `git` runs outside it (a commit writes the shared object store)
and stays under the hook's git policy. The file is kept out of git by one line in the common
`info/exclude` (git reads no per-worktree exclude file), so it never makes an agent worktree dirty.

`remove` gives the file back as it was (byte for byte while untouched, through clients/originals.py),
else drops only the `sandbox` key spark-git wrote (the user's earlier one put back)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from spark_git.clients import originals, registry, settings, writes
from spark_git.clients.claude import SANDBOX
from spark_git.core.sshsig import state_dir
from spark_git.state.files import write_text_atomic

FILE = Path(SANDBOX.file)
EXCLUDE_NOTE = "# spark-git: agents' Claude Code sandbox settings (`spark-git hooks install`; kept out of git)"
EXCLUDE_LINE = f"/{SANDBOX.file}"


def denied() -> tuple[str, ...]:
    """What an agent may not write even inside its own worktree: what the hook guards (the clients'
    directories switch hooks off, .git and .spark-git.toml redirect git and spark-git)."""
    return (*registry.protected(), *writes.GUARDED_DIRS, *writes.GUARDED_FILES)


def wanted(worktree: Path, before: dict[str, Any] | None = None) -> dict[str, Any]:
    """The sandbox for an agent session in `worktree`, over the one the file already had (its other keys
    kept, lists joined): on, no way out for a command, git outside it, spark-git's files read-only, the
    user's spark-git state directory (the approval key, the approvers) unreadable."""
    sb: dict[str, Any] = json.loads(json.dumps(before)) if isinstance(before, dict) else {}
    real = os.path.realpath(worktree)
    sb.update(enabled=True, allowUnsandboxedCommands=False)
    sb["excludedCommands"] = _joined(sb.get("excludedCommands"), ["git"])
    fs = sb["filesystem"] if isinstance(sb.get("filesystem"), dict) else {}
    fs["denyWrite"] = _joined(fs.get("denyWrite"), [f"/{real}/{d}" for d in denied()])  # `//` = absolute
    fs["denyRead"] = _joined(fs.get("denyRead"), [f"/{os.path.realpath(state_dir())}"])  # the human's approval key (issue 23)
    sb["filesystem"] = fs
    return sb


def _joined(old: Any, ours: list[str]) -> list[str]:
    have = [x for x in old if isinstance(x, str)] if isinstance(old, list) else []
    return have + [x for x in ours if x not in have]


def present(worktree: Path) -> bool:
    """The worktree's settings hold spark-git's sandbox for it."""
    try:
        data = json.loads((worktree / FILE).read_text())
    except (OSError, ValueError):
        return False
    sb = data.get("sandbox") if isinstance(data, dict) else None
    return isinstance(sb, dict) and wanted(worktree, sb) == sb


def only_ours(worktree: Path) -> bool:
    """The file is one spark-git created and nobody changed since (it holds nothing of the user's)."""
    return originals.original_if_untouched(worktree / FILE) == (True, None)


def apply(worktree: Path, *, new: bool = False) -> bool:
    """spark-git's sandbox merged into the agent worktree's local settings; True when the file changed.
    `new`: a worktree just created, so any memo of its path is from an earlier task of that name."""
    path = worktree / FILE
    if new:
        originals.forget(path)
    data = settings.load(path)
    sb = wanted(worktree, data.get("sandbox"))
    if data.get("sandbox") == sb:
        return False
    before = originals.read_exact(path)
    data["sandbox"] = sb
    settings.save(path, data)
    originals.remember(path, before, originals.read_exact(path) or "", True)
    return True


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


def _sandbox_of(text: str | None) -> Any:
    try:
        data = json.loads(text) if text else None
    except ValueError:
        return None
    return data.get("sandbox") if isinstance(data, dict) else None


# -- keeping the file out of git --------------------------------------------------------------------


def exclude(common_dir: Path) -> bool:
    """The line in `<git-common-dir>/info/exclude` (every worktree reads that one); True when added."""
    path = common_dir / "info" / "exclude"
    text = originals.read_exact(path) or ""
    if EXCLUDE_LINE in text.splitlines():
        return False
    sep = "" if not text or text.endswith("\n") else "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, f"{text}{sep}{EXCLUDE_NOTE}\n{EXCLUDE_LINE}\n")
    return True


def unexclude(common_dir: Path) -> bool:
    """spark-git's two lines taken out of info/exclude again (only when spark-git added them)."""
    path = common_dir / "info" / "exclude"
    text = originals.read_exact(path)
    ours = f"{EXCLUDE_NOTE}\n{EXCLUDE_LINE}\n"
    if text is None or ours not in text:
        return False
    write_text_atomic(path, text.replace(ours, "", 1))
    return True
