"""What spark-git knows about one agent client's files, declared once by its adapter (`FACTS` in
clients/claude.py, codex.py, gemini.py) and read through clients/registry.py: the hook's protected
names, the sandbox's denied paths, the settings copied into new worktrees, the files `hooks check`
reads. Standard library only, plain classes: the hook reads them before an agent's writes."""

from __future__ import annotations

import os
from pathlib import Path

from spark_git.clients import jsonhooks

# Where a settings file a session loads is: the user's home, the session's worktree, the main worktree.
USER, WORKTREE, MAIN = "user", "worktree", "main"


class Sandbox:
    """The OS sandbox spark-git writes for the client's agent sessions."""

    __slots__ = ("file", "needs", "userns")

    def __init__(self, file: str, needs: tuple[str, ...] = (), userns: bool = False) -> None:
        self.file = file  # the settings file it is written into, relative to the agent worktree
        self.needs = needs  # programs it needs on PATH on Linux (`hooks check` notes a missing one)
        # its bwrap makes a user namespace and mounts a /proc: run as root inside spark-git's box, that
        # needs the host's /proc (a privileged bwrap covers parts of the fresh one it mounts)
        self.userns = userns


class Run:
    """How spark-git starts the client (`agent run`): argv with `{prompt}` standing for the prompt.
    `headless`: non-interactive, machine-readable output (one JSON event a line) on stdout;
    `interactive`: the client's own terminal UI (a tmux window)."""

    __slots__ = ("headless", "interactive")

    def __init__(self, headless: tuple[str, ...], interactive: tuple[str, ...]) -> None:
        self.headless = headless
        self.interactive = interactive

    def argv(self, prompt: str, *, headless: bool = True, extra: tuple[str, ...] = ()) -> list[str]:
        return [prompt if a == "{prompt}" else a for a in (self.headless if headless else self.interactive)] + list(extra)


class Facts:
    """One client's files. `settings`: scope -> file, relative to a worktree's root or `~/…`;
    `loads`: the scopes a session started in a worktree reads there (and `main_loads`: in the main
    worktree); `protect`: names no agent may write, anywhere in a path (they switch the hooks off);
    `sandbox`: None when spark-git configures no OS sandbox for it; `off`: (dotted key, value, what
    it switches off) for settings that turn spark-git's hooks or the sandbox off in any file a session
    loads; `managed`: absolute files an administrator's settings live in (read too); `run`: how
    `agent run` starts it (None: it cannot); `wrap`: its hook entries' commands run inside jsonhooks.WRAP
    (the client lets a tool call through when its hook fails: exit 1, a silent exit 2, a signal);
    `own_box`: it has an OS sandbox of its own that spark-git configures (default: `sandbox` given), else
    `agent run` starts it inside bubblewrap (ops/life/agentbox.py), `state` (`~/…` dirs) writable there;
    `extras`: what it needs beyond its hook entries (clients/extras.py), in its own package; `model`:
    where it reaches its model (`agent run` checks the way is open before starting it)."""

    __slots__ = ("config_dir", "extras", "instructions", "loads", "main_loads", "managed", "model", "name", "off", "own_box", "protect", "run", "sandbox", "settings", "state", "title", "wrap")

    def __init__(
        self, name: str, title: str, config_dir: str, settings: dict[str, str], *,
        loads: tuple[str, ...] | None = None, main_loads: tuple[str, ...] = (), protect: tuple[str, ...] | None = None,
        sandbox: Sandbox | None = None, off: tuple[tuple[str, object, str], ...] = (), managed: tuple[str, ...] = (), run: Run | None = None,
        instructions: tuple[str, bool] | None = None, wrap: bool = False, own_box: bool | None = None, state: tuple[str, ...] = (),
        extras: str | None = None, model: tuple[str, str] | None = None,
    ) -> None:
        self.name = name  # the registry key (`--client NAME`)
        self.title = title  # as users know it ("Claude Code")
        self.config_dir = config_dir  # its directory in a repository (".claude"): its presence selects it
        self.settings = settings
        self.loads = tuple(settings) if loads is None else loads
        self.main_loads = main_loads
        self.protect = (config_dir,) if protect is None else protect
        self.sandbox = sandbox
        self.off = off
        self.managed = managed
        self.run = run
        # the coordinator's instructions `hooks install` writes: (file in the main worktree, the whole
        # file is spark-git's) — a Claude Code skill; else a marked section of the client's own file
        self.instructions = instructions
        self.wrap = wrap
        self.own_box = sandbox is not None if own_box is None else own_box
        self.state = state  # the client's own files in the user's home (`~/.gemini`, `$CODEX_HOME`): writable in spark-git's box
        self.extras = extras  # "module:attribute" of what it needs beyond its hook entries (clients/extras.py)
        self.model = model  # (the variable that points it at another endpoint, its default endpoint)

    def home_state(self, env: dict[str, str]) -> list[Path]:
        """`state` as paths: `~/x` under env's HOME, `$VAR` where env sets it."""
        home = Path(env.get("HOME") or os.path.expanduser("~"))
        out = [home / s[2:] for s in self.state if s.startswith("~/")]
        return out + [Path(env[s[1:]]) for s in self.state if s.startswith("$") and env.get(s[1:])]

    def hook(self, command: str) -> str:
        """The command of a spark-git hook entry as installed for this client."""
        return jsonhooks.wrapped(command) if self.wrap else command

    def settings_files(self) -> dict[str, Path]:
        """scope -> file: relative to the repo root, or absolute (the user's, read at call time)."""
        return {s: Path(os.path.expanduser(f)) for s, f in self.settings.items()}

    def repo_files(self) -> list[str]:
        """The settings files that live in a worktree (relative paths)."""
        return [f for s, f in self.settings.items() if not f.startswith("~")]

    def loaded(self, worktree: Path, main: Path) -> list[tuple[str, str, Path]]:
        """(where: user | worktree | main, scope, file) for every settings file a session started in
        `worktree` reads, the user's first, then the worktree's, then the main worktree's."""
        files = self.settings_files()
        out = [(USER, s, files[s]) for s in self.loads if files[s].is_absolute()]
        out += [(WORKTREE, s, worktree / files[s]) for s in self.loads if not files[s].is_absolute()]
        out += [(MAIN, s, main / files[s]) for s in self.main_loads if worktree != main]
        return out
