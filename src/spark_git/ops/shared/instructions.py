"""The coordinator's instructions `hooks install` writes for each client, in the client's own form: a
Claude Code skill (the whole file spark-git's), a marked section of AGENTS.md (Codex) or GEMINI.md
(Gemini). `hooks uninstall` takes out exactly what was added: the file as it was, byte for byte (a
file spark-git created and nobody changed is removed; one changed since is kept, its section taken out)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from spark_git.clients.base import Client
from spark_git.state.files import write_text_atomic

BEGIN = "<!-- spark-git: the coordinator's instructions (spark-git hooks install; hooks uninstall removes them) -->\n"
END = "<!-- /spark-git -->\n"
SKILL_HEAD = "---\nname: spark-git\ndescription: Coordinate AI coding agents on this repository with spark-git: tasks, agent worktrees, gated merges.\n---\n"


def _ours(c: Client, body: str) -> str:
    section = BEGIN + body + END
    own = c.facts.instructions is not None and c.facts.instructions[1]
    return SKILL_HEAD + section if own else section


def install(root: Path, clients: list[Client], body: str) -> list[str]:
    """Written or brought up to date; the files that changed."""
    changed = []
    for c, path, old in _files(root, clients):
        new = _with(old, _ours(c, body))
        if new != old:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_text_atomic(path, new)
            changed.append(str(path))
    return changed


def _files(root: Path, clients: list[Client]) -> Iterator[tuple[Client, Path, str | None]]:
    """Each client that has instructions: its file under `root` and what the file holds now (None: absent)."""
    for c in clients:
        if c.facts.instructions is not None:
            path = root / c.facts.instructions[0]
            yield c, path, path.read_text() if path.is_file() else None


def _with(old: str | None, ours: str) -> str:
    if old is None:
        return ours
    start = old.find(BEGIN)
    if start < 0:
        return old + "\n" + ours.removeprefix(SKILL_HEAD)  # appended after a blank line (removed with it)
    end = old.find(END, start)
    end = len(old) if end < 0 else end + len(END)
    return old[:start] + ours[ours.find(BEGIN):] + old[end:]


def uninstall(root: Path, clients: list[Client], body: str) -> list[str]:
    changed = []
    for c, path, old in _files(root, clients):
        if old is None or BEGIN not in old:
            continue
        if old == _ours(c, body) or (old.startswith(SKILL_HEAD + BEGIN) and old.endswith(END)):
            path.unlink()
            _prune(path.parent, root)
        else:
            start, end = old.find(BEGIN), old.find(END, old.find(BEGIN))
            start -= 1 if start > 0 and old[start - 1] == "\n" else 0  # the blank line install put before it
            write_text_atomic(path, old[:start] + (old[end + len(END):] if end >= 0 else ""))
        changed.append(str(path))
    return changed


def _prune(d: Path, root: Path) -> None:
    """Empty directories the skill's file was in (spark-git made them), up to the client's own."""
    while d != root and d.parent != root and d.is_dir() and not any(d.iterdir()):
        d.rmdir()
        d = d.parent
