"""Claude Code's side of `hooks install|uninstall|check` and of new agent worktrees: its sandbox
(clients/claude/sandbox.py) in every agent worktree while spark-git's Claude hooks are installed,
granting what each session owns (clients/claude/owned.py), and the exclude line that keeps the file
out of git."""

from __future__ import annotations

from pathlib import Path

from spark_git.clients import jsonhooks, settings
from spark_git.clients.claude import CLAUDE, sandbox
from spark_git.clients.claude import owned as sandboxes
from spark_git.clients.extras import Extras, Loads, NoExtras
from spark_git.clients.settings import HooksData
from spark_git.core.layout import Layout
from spark_git.state.locks import EXCLUDE
from spark_git.state.store import Store


def installed(layout: Layout) -> bool:
    """spark-git's Claude hooks are in some scope's settings (the repo's or the user's)."""
    event = CLAUDE.wanted()[0].event
    roots = dict.fromkeys([layout.repo.toplevel or layout.main_worktree, layout.main_worktree])
    return any(jsonhooks.file_has(p if p.is_absolute() else r / p, event) for r in roots for p in CLAUDE.settings_files().values())


class ClaudeExtras(NoExtras):
    def preflight(self, layout: Layout, store: Store, agents: list[Path]) -> None:
        for wt in agents:
            settings.load(wt / sandbox.FILE)  # an agent's settings spark-git would refuse to rewrite: nothing written yet

    def install(self, layout: Layout, store: Store, f: HooksData, scope: str, agents: list[Path]) -> list[str]:
        return _all(layout, store, agents, on=True) if agents and installed(layout) else []

    def uninstall(self, layout: Layout, store: Store, f: HooksData, scope: str, agents: list[Path], before: list[str]) -> list[str]:
        return _all(layout, store, agents, on=False) if agents and not installed(layout) else []

    def new_worktrees(self, layout: Layout, store: Store, agents: list[Path], *, before: bool) -> list[Path]:
        """The exclude line `before` provisioning copies ignored settings; after it, the sandbox into
        each new agent worktree whose settings can be read (an unreadable one is left to the hook)."""
        if not agents or not installed(layout):
            return []
        if before:
            _exclude(store, on=True)
            return []
        sandboxes.refresh(layout, store, new=agents)  # the others' too: their git entries name the new branches
        known = sandboxes.boxes(layout, store)
        return [wt for wt in agents if sandboxes.present(layout, store, wt, known)]

    def refresh(self, layout: Layout, store: Store) -> None:
        """A denied path that no longer exists would be mounted over: an empty file on the host while a command runs."""
        if installed(layout):
            sandboxes.refresh(layout, store)

    def check(self, layout: Layout, store: Store, worktrees: list[Path], found: list[Loads]) -> list[Loads]:
        known = sandboxes.boxes(layout, store)
        return [f._replace(sandbox=sandboxes.present(layout, store, wt, known)) for wt, f in zip(worktrees, found, strict=True)]

    def own_files(self, worktree: Path) -> list[str]:
        return [str(sandbox.FILE)] if sandbox.only_ours(worktree) else []

    def settle(self, layout: Layout, store: Store, worktree: Path) -> str | None:
        from spark_git.clients.claude import settle

        return settle.settle(layout, store, worktree)


def _all(layout: Layout, store: Store, agents: list[Path], *, on: bool) -> list[str]:
    """Written into (on) or taken out of every agent worktree; the paths whose file changed."""
    if on:
        _exclude(store, on=True)
    changed = [str(wt) for wt in sandboxes.refresh(layout, store)] if on else [str(wt) for wt in agents if sandbox.remove(wt)]
    tasks = [layout.task_worktree(t) for t in layout.task_names()]
    if not on and not any((wt / sandbox.FILE).exists() for wt in tasks + agents):
        _exclude(store, on=False)  # no worktree of a task would show an untracked copy
    return changed


def _exclude(store: Store, *, on: bool) -> None:
    """spark-git's line in or out of info/exclude, under its mutex: two starts at once each read the
    file, and without it both would write it (the line twice, or one's change lost)."""
    common = store.layout.repo.common_dir
    with store.mutex(EXCLUDE):
        if on:
            sandbox.exclude(common)
        else:
            sandbox.unexclude(common)


EXTRAS: Extras = ClaudeExtras()  # typed so mypy checks it against the plug-in kind
