"""Codex CLI's extras (clients/extras.py) for `hooks install|uninstall|check` and new agent worktrees
(issue 22): the trust entries in the user's Codex config without which Codex 0.169 runs none of the
hooks (clients/codex/trust.py), and Codex's workspace-write sandbox in each agent worktree
(clients/codex/box.py)."""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from typing import Any

from spark_git.clients.codex import CODEX, home
from spark_git.clients.codex import box as codexbox
from spark_git.clients.codex import trust as codextrust
from spark_git.clients.extras import Extras, Loads, NoExtras, agent_worktrees
from spark_git.clients.facts import Facts
from spark_git.clients.settings import HooksData
from spark_git.core.layout import Layout
from spark_git.state.locks import EXCLUDE
from spark_git.state.store import Store

NAME = CODEX.name


class CodexExtras(NoExtras):
    def install(self, layout: Layout, store: Store, f: HooksData, scope: str, agents: list[Path]) -> list[str]:
        f.trusted = trust(layout, scope)
        f.changed = f.changed or bool(f.trusted)
        return sandbox_all(layout, store, agents, on=True)

    def before_uninstall(self, layout: Layout, scope: str) -> list[str]:
        return untrust(layout, scope)  # while the entries are there to name

    def uninstall(self, layout: Layout, store: Store, f: HooksData, scope: str, agents: list[Path], before: list[str]) -> list[str]:
        f.trusted = before
        f.changed = f.changed or bool(f.trusted)
        return sandbox_all(layout, store, agents, on=False) if not installed(layout) else []

    def new_worktrees(self, layout: Layout, store: Store, agents: list[Path], *, before: bool) -> list[Path]:
        return [] if before else sandbox_new(layout, store, agents, agent_worktrees(layout, store))

    def check(self, layout: Layout, store: Store, worktrees: list[Path], found: list[Loads]) -> list[Loads]:
        return [Loads(*check(layout, wt)) for wt in worktrees]  # Codex reads the main checkout's file: the worktree's own say nothing

    def own_files(self, worktree: Path) -> list[str]:
        return [str(codexbox.FILE)] if codexbox.ours(worktree) else []

    def model_url(self, facts: Facts, env: dict[str, str], extra: tuple[str, ...]) -> str | None:
        """The provider's base_url: `-c` overrides first, then config.toml; the built-in openai
        provider's is OPENAI_BASE_URL or its default. None where a profile or --oss decides."""
        over = _overrides(extra)
        cfg = _config(Path(env.get("CODEX_HOME") or home()) / "config.toml")
        if cfg is None or "profile" in cfg or any(a in ("--oss", "-p", "--profile") or a.startswith("--profile=") for a in extra):
            return None
        provider = str(over.get("model_provider") or cfg.get("model_provider") or "openai")
        table = cfg.get("model_providers", {}).get(provider, {}) if isinstance(cfg.get("model_providers"), dict) else {}
        url = over.get(f"model_providers.{provider}.base_url") or (table.get("base_url") if isinstance(table, dict) else None)
        if isinstance(url, str) and url:
            return url
        return super().model_url(facts, env, extra) if provider == "openai" else None


def _root(layout: Layout) -> Path:
    return Path(os.path.realpath(layout.main_worktree))


def hooks_files(layout: Layout) -> dict[str, tuple[Path, Path | None]]:
    """scope -> (the hooks.json Codex reads for an agent session, the project that must be trusted):
    in a linked worktree Codex takes the main checkout's, whatever the worktree holds."""
    files = CODEX.settings_files()
    return {"project": (_root(layout) / files["project"], _root(layout)), "user": (files["user"], None)}


def installed(layout: Layout) -> bool:
    return any(codextrust.ours(f) for f, _ in hooks_files(layout).values())


def trust(layout: Layout, scope: str) -> list[str]:
    f, project = hooks_files(layout)[scope]
    return codextrust.trust(f, project)


def untrust(layout: Layout, scope: str) -> list[str]:
    return codextrust.untrust(hooks_files(layout)[scope][0])


def sandbox_all(layout: Layout, store: Store, agents: list[Path], *, on: bool) -> list[str]:
    """Codex's sandbox written into (on) or taken out of each agent worktree; the ones changed."""
    common = layout.repo.common_dir
    if on and agents:
        with store.mutex(EXCLUDE):
            codexbox.exclude(common)
    return [str(wt) for wt in agents if (codexbox.apply(wt, common) if on else codexbox.remove(wt))]


def sandbox_new(layout: Layout, store: Store, agents: list[Path], existing: list[Path]) -> list[Path]:
    """At agent worktree creation, when spark-git's Codex hooks are installed: the new worktrees get
    the sandbox, and every `existing` agent's is regenerated (the new branches become read-only there)."""
    if not agents or not installed(layout):
        return []
    everyone = list(dict.fromkeys([*agents, *existing]))
    changed = set(sandbox_all(layout, store, everyone, on=True))
    return [wt for wt in agents if str(wt) in changed]


def check(layout: Layout, worktree: Path) -> tuple[bool, str | None, str | None, bool]:
    """(loads, source, problem, sandbox on) for one agent worktree."""
    boxed = codexbox.present(worktree)
    found = [(f, p) for f, p in hooks_files(layout).values() if codextrust.ours(f)]
    if not found:
        return False, None, (f"no spark-git hooks for codex: `spark-git hooks install --client codex` "
                             f"(Codex reads {hooks_files(layout)['project'][0]} in every worktree of this repository)"), boxed
    problems: list[str] = []
    for f, project in found:
        why = codextrust.problems(f, project)
        if project is not None and not (worktree / ".codex").is_dir():
            why.append(f"{worktree} has no .codex directory, so Codex loads no project config there")
        if not why:
            return True, f"{f} ({'project' if project else 'user'} scope, trusted)", None, boxed
        problems += why
    return False, None, "; ".join(problems) + f"; run `spark-git hooks install --client {NAME}`", boxed


EXTRAS: Extras = CodexExtras()


def _overrides(extra: tuple[str, ...]) -> dict[str, object]:
    """`-c key=value` / `--config key=value` arguments, each value read as TOML (else as text), as Codex does."""
    import tomllib

    out: dict[str, object] = {}
    pairs = [b for a, b in itertools.pairwise(extra) if a in ("-c", "--config")]
    pairs += [a.split("=", 1)[1] for a in extra if a.startswith("--config=")]
    for pair in pairs:
        key, eq, raw = pair.partition("=")
        if not eq:
            continue
        try:
            out[key.strip()] = tomllib.loads(f"v = {raw}")["v"]
        except tomllib.TOMLDecodeError:
            out[key.strip()] = raw
    return out


def _config(path: Path) -> dict[str, Any] | None:
    """Codex's config.toml; {} when there is none (its defaults), None when it cannot be read."""
    import tomllib

    try:
        return tomllib.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
