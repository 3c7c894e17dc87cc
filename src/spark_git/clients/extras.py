"""What a client needs beyond its hook entries, as a plug-in kind of its own (pre-commit's shape): an
OS sandbox written into agent worktrees (Claude Code, Codex), trust entries without which the client
runs no hooks (Codex), settings that switch the hooks off (Gemini). Each client's `Extras` lives in its
package and is named by its facts (`Facts.extras`, "module:attribute", imported when asked for);
`hooks install|uninstall|check`, new worktrees and `status` go through here and name no client."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, Protocol

if TYPE_CHECKING:
    from spark_git.clients.base import Client
    from spark_git.clients.facts import Facts
    from spark_git.clients.settings import HooksData
    from spark_git.core.layout import Layout
    from spark_git.state.store import Store


class Loads(NamedTuple):
    """Does a session of the client in one agent worktree load spark-git's hooks, and its sandbox."""

    loads: bool
    source: str | None  # the settings file that brings the hooks, and how it got there
    problem: str | None
    sandbox: bool | None = None  # spark-git's sandbox is in the worktree (None: the client has none)


class Extras(Protocol):
    def preflight(self, layout: Layout, store: Store, agents: list[Path]) -> None:
        """Reads what install would rewrite in the agent worktrees: a refusal before anything is written."""
        ...

    def install(self, layout: Layout, store: Store, f: HooksData, scope: str, agents: list[Path]) -> list[str]:
        """After its hook entries were written to `f`: the rest; the agent worktrees changed."""
        ...

    def before_uninstall(self, layout: Layout, scope: str) -> list[str]:
        """What uninstall will take out that only the entries name (read while they are there)."""
        ...

    def uninstall(self, layout: Layout, store: Store, f: HooksData, scope: str, agents: list[Path], before: list[str]) -> list[str]:
        ...

    def new_worktrees(self, layout: Layout, store: Store, agents: list[Path], *, before: bool) -> list[Path]:
        """New agent worktrees, `before` their ignored files are copied and after; the boxed ones."""
        ...

    def refresh(self, layout: Layout, store: Store) -> None:
        """Branches or worktrees came or went: every agent's sandbox follows."""
        ...

    def check(self, layout: Layout, store: Store, worktrees: list[Path], found: list[Loads]) -> list[Loads]:
        """`hooks check` per agent worktree, from what its settings files say (`found`)."""
        ...

    def notes(self, layout: Layout, loading: list[Path]) -> list[str]:
        """`hooks check` notes (not failures), given the worktrees that load the hooks."""
        ...

    def warning(self, loading: list[Path]) -> str | None:
        """One line for `start`/`status` about worktrees whose sessions would skip the hooks anyway."""
        ...

    def own_files(self, worktree: Path) -> list[str]:
        """spark-git's own files in an agent worktree, untouched since it wrote them: nobody's work."""
        ...

    def model_url(self, facts: Facts, env: dict[str, str], extra: tuple[str, ...]) -> str | None:
        """Where a run with this environment and these client arguments reaches the model (None: not known)."""
        ...

    def settle(self, layout: Layout, store: Store, worktree: Path) -> str | None:
        """`hook worktree-create` made `worktree` for a session of this client: wait until the session
        can use it (its sandbox grant taken up); a note when it did not."""
        ...


class NoExtras:
    """A client that needs nothing beyond its hook entries (and the base of those that need some)."""

    def preflight(self, layout: Layout, store: Store, agents: list[Path]) -> None:
        return None

    def install(self, layout: Layout, store: Store, f: HooksData, scope: str, agents: list[Path]) -> list[str]:
        return []

    def before_uninstall(self, layout: Layout, scope: str) -> list[str]:
        return []

    def uninstall(self, layout: Layout, store: Store, f: HooksData, scope: str, agents: list[Path], before: list[str]) -> list[str]:
        return []

    def new_worktrees(self, layout: Layout, store: Store, agents: list[Path], *, before: bool) -> list[Path]:
        return []

    def refresh(self, layout: Layout, store: Store) -> None:
        return None

    def check(self, layout: Layout, store: Store, worktrees: list[Path], found: list[Loads]) -> list[Loads]:
        return found

    def notes(self, layout: Layout, loading: list[Path]) -> list[str]:
        return []

    def warning(self, loading: list[Path]) -> str | None:
        return None

    def own_files(self, worktree: Path) -> list[str]:
        return []

    def settle(self, layout: Layout, store: Store, worktree: Path) -> str | None:
        return None

    def model_url(self, facts: Facts, env: dict[str, str], extra: tuple[str, ...]) -> str | None:
        if facts.model is None:
            return None
        var, default = facts.model
        return env.get(var) or default


NONE = NoExtras()


def of(c: Client) -> Extras:
    if c.facts.extras is None:
        return NONE
    mod, _, attr = c.facts.extras.partition(":")
    found: Extras = getattr(importlib.import_module(mod), attr)
    return found


def agent_worktrees(layout: Layout, store: Store) -> list[Path]:
    """Every agent worktree of every task, where the layout puts it (task.json's paths are not trusted)."""
    out = []
    for t in store.task_names():
        tf = store.read_task(t)
        out += [layout.agent_worktree(t, a) for a in sorted(tf.agents)] if tf else []
    return [p for p in out if p.is_dir()]
