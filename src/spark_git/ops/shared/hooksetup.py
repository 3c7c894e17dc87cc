"""`hooks install|uninstall|check` over every agent client (clients/registry.py): which clients by
default, every settings file read before any is written (a refusal changes nothing), and whether
each agent worktree will load the hooks. What a client needs beyond its entries (a sandbox, trust)
is its own extras' (clients/extras.py): nothing here names a client."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

from spark_git.clients import extras, facts, jsonhooks, registry, settings
from spark_git.clients.base import Client
from spark_git.clients.extras import Loads
from spark_git.core import gatebox, suggest
from spark_git.core.errors import BadInput
from spark_git.core.git import Git
from spark_git.core.layout import Layout
from spark_git.core.model import Model
from spark_git.ops.shared import instructions, liveagents
from spark_git.state.store import Store


def root_of(layout: Layout) -> Path:
    return layout.repo.toplevel or layout.main_worktree


def chosen(root: Path, names: list[str], scope: str) -> list[Client]:
    """The clients asked for; by default those whose config directory (.claude, .codex, .gemini)
    exists in the repo and that have `scope`, else the default client (Claude Code)."""
    bad = [n for n in names if n not in registry.CLIENTS]
    if bad:
        raise BadInput(f"unknown --client {', '.join(bad)}{suggest.did_you_mean(bad[0], registry.CLIENTS)}: use {', '.join(registry.CLIENTS)}",
                       next=[f"spark-git hooks install --client {suggest.near(bad[0], registry.CLIENTS) or registry.DEFAULT}"])
    if names:
        return [registry.get(n) for n in dict.fromkeys(names)]
    found = [c for c in registry.every() if (root / c.facts.config_dir).is_dir()]
    found = [c for c in found if scope in c.settings_files()]
    return found or [registry.get(registry.DEFAULT)]


def _paths(root: Path, clients: list[Client], scope: str) -> None:
    """Every file resolved and read first: a bad scope or an unreadable file refuses before any write."""
    for c in clients:
        settings.load(settings.scope_path(root, c.name, c.settings_files(), scope))


def install(layout: Layout, store: Store, names: list[str], scope: str, guide: str | None = None) -> settings.HooksSetData:
    root = root_of(layout)
    clients = chosen(root, names, scope)
    _paths(root, clients, scope)
    agents = extras.agent_worktrees(layout, store)
    for c in clients:
        extras.of(c).preflight(layout, store, agents)
    files = [c.install(root, scope) for c in clients]
    done = [wt for c, f in zip(clients, files, strict=True) for wt in extras.of(c).install(layout, store, f, scope, agents)]
    guides = instructions.install(root, clients, guide) if guide is not None and scope == "project" else []
    return _set(files, done, guides)


def uninstall(layout: Layout, store: Store, names: list[str], scope: str, guide: str | None = None) -> settings.HooksSetData:
    root = root_of(layout)
    clients = chosen(root, names, scope)
    _paths(root, clients, scope)
    agents = extras.agent_worktrees(layout, store)
    before = [extras.of(c).before_uninstall(layout, scope) for c in clients]
    files = [c.uninstall(root, scope) for c in clients]
    done = [wt for c, f, b in zip(clients, files, before, strict=True) for wt in extras.of(c).uninstall(layout, store, f, scope, agents, b)]
    guides = instructions.uninstall(root, clients, guide) if guide is not None and scope == "project" else []
    return _set(files, done, guides)


def _set(files: list[settings.HooksData], done: list[str], guides: list[str]) -> settings.HooksSetData:
    done = list(dict.fromkeys(done))
    return settings.HooksSetData(changed=any(f.changed for f in files) or bool(done) or bool(guides), files=files, sandbox=done, instructions=guides)


def new_worktrees(layout: Layout, store: Store, agents: list[Path], *, before: bool) -> list[Path]:
    """New agent worktrees get what each client needs (its sandbox), `before` their ignored files are
    copied (the files kept out of git) and after (over the copied settings, never under them)."""
    return list(dict.fromkeys(wt for c in registry.every() for wt in extras.of(c).new_worktrees(layout, store, agents, before=before)))


def refresh(layout: Layout, store: Store) -> None:
    """Branches or worktrees came or went: every client's sandboxes follow (a denied path that no
    longer exists would be mounted over)."""
    for c in registry.every():
        extras.of(c).refresh(layout, store)


# -- check -----------------------------------------------------------------------------------------


class HookCheck(Model):
    task: str
    agent: str
    worktree: str
    client: str
    loads: bool
    source: str | None = None  # the settings file that brings the hooks, and how it got there
    problem: str | None = None
    sandbox: bool | None = None  # claude: Claude Code's sandbox is in the worktree's .claude/settings.local.json; codex: Codex's in its .codex/config.toml
    switched_off: list[str] = []  # "<file>: <key> = <value>" for each setting a session here loads that turns the hooks or the sandbox off


class HooksCheckData(Model):
    spark_git: str | None  # `spark-git` as the hook's PATH resolves it; None: not found
    clients: list[str]
    checks: list[HookCheck]
    ok: bool
    bwrap: str | None = None  # bubblewrap, which Claude Code's sandbox needs on Linux (None: not on PATH)
    notes: list[str] = []  # worth knowing, not failures (the sandbox cannot run here)


def _event(c: Client) -> str:
    return c.wanted()[0].event  # the pre-tool-use event comes first


def configured(root: Path) -> list[Client]:
    """Clients with spark-git's hooks in some settings file of the main worktree or the user's."""
    out = []
    for c in registry.every():
        files = c.settings_files()
        if any(jsonhooks.file_has(p if p.is_absolute() else root / p, _event(c)) for p in files.values()):
            out.append(c)
    return out


def _one(wt: Path, main: Path, c: Client) -> tuple[bool, str | None, str | None]:
    """Does a session of `c` in `wt` load spark-git's hooks: from which of the files it reads."""
    for where, scope, path in c.facts.loaded(wt, main):
        if not jsonhooks.file_has(path, _event(c)):
            continue
        if where == facts.USER:
            return True, f"{path} (user scope)", None
        if where == facts.MAIN:
            return True, f"{path} (the main worktree's {scope} scope)", None
        return _in_worktree(Git(wt), scope, path.relative_to(wt))
    return False, None, (
        f"no spark-git hooks for {c.name} in {wt}: commit {c.settings_files()['project']} on the base branch (then `spark-git update`), "
        f"or `spark-git hooks install --client {c.name} --scope user`")


def _in_worktree(git: Git, scope: str, rel: Path) -> tuple[bool, str | None, str | None]:
    if git.run("ls-files", "--", str(rel)).stdout.strip():
        return True, f"{rel} ({scope} scope, committed)", None
    if str(rel) in git.ignored([str(rel)]):
        return True, f"{rel} ({scope} scope, ignored, copied into the worktree)", None
    return True, f"{rel} ({scope} scope, not committed)", (
        f"{rel} is present here but neither committed nor ignored: worktrees created later will not get it")


def _switched_off(c: Client, wt: Path, main: Path) -> list[str]:
    """Each setting in a file a session of `c` in `wt` loads (the main worktree's and an administrator's
    included) that turns spark-git's hooks or sandbox off. A key the worktree's own local file sets
    (spark-git's sandbox) is not undone by the user's or the project's file: that one wins (measured
    with Claude Code 2.1.328; the main worktree's local file does win over it)."""
    loaded = c.facts.loaded(wt, main) + [("managed", "managed", Path(m)) for m in c.facts.managed]
    own = _json(wt / c.facts.settings["local"]) if "local" in c.facts.settings else None
    out = []
    for where, scope, path in loaded:
        data = _json(path)
        lower = where == facts.USER or (where == facts.WORKTREE and scope != "local")
        for key, value, what in c.facts.off:
            if _at(data, key) is value and not (lower and _at(own, key) not in (None, value)):
                out.append(f"{path}: {key} = {json.dumps(value)} turns {c.facts.title}'s {what} off")
    return out


def _json(path: Path) -> object:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _at(data: object, key: str) -> object:
    for part in key.split("."):
        data = data.get(part) if isinstance(data, dict) else None
    return data


def _sandbox_notes(clients: list[Client], checks: list[HookCheck]) -> list[str]:
    """A client's sandbox that cannot run here for want of a program: worth knowing, not a failure."""
    if not sys.platform.startswith("linux"):
        return []
    out = []
    for c in clients:
        needs = c.facts.sandbox.needs if c.facts.sandbox else ()
        missing = [p for p in needs if shutil.which(p, path=os.environ.get("PATH")) is None]
        if missing and any(k.sandbox for k in checks if k.client == c.name):
            out.append(f"`{'`, `'.join(missing)}` not on PATH: {c.facts.title} runs agents' commands without its sandbox here "
                       f"(spark-git's hook still checks them); install {' and '.join(missing)} to have both")
    return out


def check(layout: Layout, store: Store) -> HooksCheckData:
    root = root_of(layout)
    clients = configured(root) or [registry.get(registry.DEFAULT)]
    exe = shutil.which("spark-git", path=os.environ.get("PATH"))
    rows = [(t, a, e) for t in store.task_names() if (tf := store.read_task(t)) for a, e in sorted(tf.agents.items())]
    wts = [layout.agent_worktree(t, a) for t, a, _ in rows]
    found = {c.name: extras.of(c).check(layout, store, wts, [Loads(*_one(Path(e.worktree), layout.main_worktree, c)) for _, _, e in rows])
             for c in clients}
    checks = [_row(t, a, e.worktree, c, found[c.name][i], exe, layout) for i, (t, a, e) in enumerate(rows) for c in clients]
    bwrap = shutil.which("bwrap", path=os.environ.get("PATH"))
    notes = _sandbox_notes(clients, checks) + gatebox.gate_warnings(layout.config.gates) + liveagents.unboxed(store)
    notes += [n for c in clients for n in extras.of(c).notes(layout, [wt for wt, k in zip(wts, found[c.name], strict=True) if k.loads])]
    return HooksCheckData(spark_git=exe, clients=[c.name for c in clients], checks=checks, ok=all(c.loads and not c.switched_off for c in checks), bwrap=bwrap, notes=notes)


def _row(task: str, agent: str, worktree: str, c: Client, k: Loads, exe: str | None, layout: Layout) -> HookCheck:
    loads, problem = (False, "`spark-git` is not on PATH: the hook cannot run (and with onFailure=block every tool call is refused)") \
        if exe is None else (k.loads, k.problem)
    return HookCheck(task=task, agent=agent, worktree=worktree, client=c.name, loads=loads, source=k.source, problem=problem,
                     sandbox=k.sandbox, switched_off=_switched_off(c, Path(worktree), layout.main_worktree))
