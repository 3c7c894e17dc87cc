"""`hooks install|uninstall|check` over every agent client (clients/registry.py): which clients by
default, every settings file read before any is written (a refusal changes nothing), and whether
each agent worktree will load the hooks."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

from spark_git.clients import facts, jsonhooks, registry, settings
from spark_git.clients.base import Client
from spark_git.clients.claude import sandbox
from spark_git.clients.codex import setup as codexsetup
from spark_git.clients.gemini import GEMINI
from spark_git.clients.gemini import load as geminiload
from spark_git.core import gatebox, suggest
from spark_git.core.errors import BadInput
from spark_git.core.git import Git
from spark_git.core.layout import Layout
from spark_git.core.model import Model
from spark_git.ops.shared import instructions, liveagents, sandboxes
from spark_git.state.locks import EXCLUDE
from spark_git.state.store import Store


def boxed(c: Client) -> bool:
    """spark-git writes an OS sandbox for this client's agent sessions (clients/claude/sandbox.py)."""
    return c.facts.sandbox is not None


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
    agents = agent_worktrees(layout, store) if any(boxed(c) for c in clients) else []
    for wt in agents:
        settings.load(wt / sandbox.FILE)  # an agent's settings spark-git would refuse to rewrite: nothing written yet
    files = [c.install(root, scope) for c in clients]
    done = _sandbox_all(layout, store, agents, on=True) if agents and claude_installed(layout) else []
    done += _codex(layout, store, files, scope, on=True)
    guides = instructions.install(root, clients, guide) if guide is not None and scope == "project" else []
    return settings.HooksSetData(changed=any(f.changed for f in files) or bool(done) or bool(guides), files=files, sandbox=done, instructions=guides)


def uninstall(layout: Layout, store: Store, names: list[str], scope: str, guide: str | None = None) -> settings.HooksSetData:
    root = root_of(layout)
    clients = chosen(root, names, scope)
    _paths(root, clients, scope)
    agents = agent_worktrees(layout, store) if any(boxed(c) for c in clients) else []
    untrusted = codexsetup.untrust(layout, scope) if any(c.name == codexsetup.NAME for c in clients) else []  # while the entries are there to name
    files = [c.uninstall(root, scope) for c in clients]
    done = _sandbox_all(layout, store, agents, on=False) if agents and not claude_installed(layout) else []
    done += _codex(layout, store, files, scope, on=False, untrusted=untrusted)
    guides = instructions.uninstall(root, clients, guide) if guide is not None and scope == "project" else []
    return settings.HooksSetData(changed=any(f.changed for f in files) or bool(done) or bool(guides), files=files, sandbox=done, instructions=guides)


def _codex(layout: Layout, store: Store, files: list[settings.HooksData], scope: str, *, on: bool, untrusted: list[str] | None = None) -> list[str]:
    """Codex: its trust entries (into its file's `trusted`) and its sandbox in the agent worktrees."""
    f = next((f for f in files if f.client == codexsetup.NAME), None)
    if f is None:
        return []
    f.trusted = codexsetup.trust(layout, scope) if on else untrusted or []
    f.changed = f.changed or bool(f.trusted)
    agents = agent_worktrees(layout, store)
    return codexsetup.sandbox_all(layout, store, agents, on=True) if on else (
        codexsetup.sandbox_all(layout, store, agents, on=False) if not codexsetup.installed(layout) else [])


# -- Claude Code's sandbox in agent worktrees (clients/claude/sandbox.py) ----------------------------------


def claude_installed(layout: Layout) -> bool:
    """spark-git's hooks of a client with a sandbox (Claude Code) are in some scope's settings (the
    repo's or the user's)."""
    roots = dict.fromkeys([root_of(layout), layout.main_worktree])
    return any(boxed(c) for r in roots for c in configured(r))


def agent_worktrees(layout: Layout, store: Store) -> list[Path]:
    """Every agent worktree of every task, where the layout puts it (task.json's paths are not trusted)."""
    out = []
    for t in store.task_names():
        tf = store.read_task(t)
        out += [layout.agent_worktree(t, a) for a in sorted(tf.agents)] if tf else []
    return [p for p in out if p.is_dir()]


def _sandbox_all(layout: Layout, store: Store, agents: list[Path], *, on: bool) -> list[str]:
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


def sandbox_refresh(layout: Layout, store: Store) -> None:
    """Every agent's sandbox rewritten after refs came or went (ops/shared/sandboxes.py): a denied path
    that no longer exists would be mounted over, an empty file on the host while a command runs."""
    if claude_installed(layout):
        sandboxes.refresh(layout, store)


def sandbox_new(layout: Layout, store: Store, agents: list[Path], *, before: bool) -> list[Path]:
    """At agent worktree creation, when spark-git's Claude hooks are installed: the exclude line `before`
    provisioning copies ignored settings; after it, the sandbox into each new agent worktree whose
    settings can be read (the ones written are returned; an unreadable one is left to the hook)."""
    if not agents or not claude_installed(layout):
        return []
    if before:
        _exclude(store, on=True)
        return []
    sandboxes.refresh(layout, store, new=agents)  # the others' too: their git entries name the new branches
    known = sandboxes.boxes(layout, store)
    return [wt for wt in agents if sandboxes.present(layout, store, wt, known)]


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


def _ours(path: Path, event: str) -> bool:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return False
    return jsonhooks.has(data.get("hooks") if isinstance(data, dict) else None, event)


def _event(c: Client) -> str:
    return c.wanted()[0].event  # the pre-tool-use event comes first


def configured(root: Path) -> list[Client]:
    """Clients with spark-git's hooks in some settings file of the main worktree or the user's."""
    out = []
    for c in registry.every():
        files = c.settings_files()
        if any(_ours(p if p.is_absolute() else root / p, _event(c)) for p in files.values()):
            out.append(c)
    return out


def _one(wt: Path, main: Path, c: Client) -> tuple[bool, str | None, str | None]:
    """Does a session of `c` in `wt` load spark-git's hooks: from which of the files it reads."""
    for where, scope, path in c.facts.loaded(wt, main):
        if not _ours(path, _event(c)):
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
    checks: list[HookCheck] = []
    known = sandboxes.boxes(layout, store)
    for t in store.task_names():
        tf = store.read_task(t)
        for a, e in sorted(tf.agents.items()) if tf else []:
            for c in clients:
                loads, source, problem = _one(Path(e.worktree), layout.main_worktree, c)
                box = sandboxes.present(layout, store, layout.agent_worktree(t, a), known) if boxed(c) else None
                if c.name == codexsetup.NAME:
                    loads, source, problem, box = codexsetup.check(layout, layout.agent_worktree(t, a))
                if loads and c.name == GEMINI.name:  # trust and hooksConfig can still switch them off
                    why = geminiload.problem(Path(e.worktree), os.environ, c.settings_files()["project"], layout.tasks_root)
                    loads, problem = (False, why) if why else (loads, problem)
                if exe is None:
                    loads, problem = False, "`spark-git` is not on PATH: the hook cannot run (and with onFailure=block every tool call is refused)"
                off = _switched_off(c, Path(e.worktree), layout.main_worktree)
                checks.append(HookCheck(task=t, agent=a, worktree=e.worktree, client=c.name, loads=loads, source=source, problem=problem,
                                        sandbox=box, switched_off=off))
    bwrap = shutil.which("bwrap", path=os.environ.get("PATH"))
    notes = _sandbox_notes(clients, checks) + gatebox.gate_warnings(layout.config.gates) + liveagents.unboxed(store)
    if any(c.client == GEMINI.name and c.loads for c in checks) and not _ours(GEMINI.settings_files()["user"], _event(GEMINI)):
        notes.append(geminiload.SUBDIRECTORY)  # project scope only: read from the session's folder alone
    return HooksCheckData(spark_git=exe, clients=[c.name for c in clients], checks=checks, ok=all(c.loads and not c.switched_off for c in checks), bwrap=bwrap, notes=notes)
