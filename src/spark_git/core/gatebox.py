"""The boxes spark-git runs other people's code in: bubblewrap (bwrap), one builder (`Sandbox`).

A gate's box (`for_gate`) allows a list and forbids the rest:
- the whole file system read-only (`--ro-bind / /`), a fresh /dev and /proc;
- its own PID namespace (no `/proc/<ancestor>/root` to walk), IPC and UTS namespaces, a new session
  (no terminal to inject into), dying with spark-git; no network unless `[gates] network = true`;
- writable only the clean checkout it gates (but its `.git` file) and its admin dir under
  `.git/worktrees/<id>` (but HEAD, commondir and gitdir), a private /tmp and a throwaway HOME (an
  empty tmpfs at the user's home path: `~/.config`, `~/.bashrc`, `~/.ssh` and the state directory
  are not there); the
  toolchain it runs from (PATH directories, the virtualenv) shown again read-only where those hide it;
- /run private (the user's runtime sockets), and every host unix socket left visible covered;
- the environment cleared to an allow-list (PATH, locale, the virtualenv, `[gates] env`, spark-git's
  SPARK_* of the gate).
Without bwrap the gate runs as before, unsandboxed, and `status`/`hooks check` say so. SPARK_BWRAP
names the bwrap to use (empty: none; a seam for tests and for machines where bwrap is elsewhere). The
same builder boxes the agents `agent run` starts (ops/life/agentbox.py: `all_readonly`, `fresh`)."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from spark_git.core.config import GatesConfig

BWRAP_ENV = "SPARK_BWRAP"
PINNED = ("HEAD", "commondir", "gitdir")  # of the worktree's admin dir: where it points stays as it is


def bwrap() -> str | None:
    """The bubblewrap to run gates in, or None (not installed, or hidden by SPARK_BWRAP="")."""
    given = os.environ.get(BWRAP_ENV)
    if given is not None:
        return shutil.which(given) if given else None
    return shutil.which("bwrap")


UNSANDBOXED = ("the build and final gates run unsandboxed: bubblewrap (bwrap) is not installed, so a gate "
               "(the agents' code) could move refs or write anywhere in the repository; install bubblewrap")


def gate_warnings(gates: GatesConfig) -> list[str]:
    """[UNSANDBOXED] when a command gate is configured and bwrap is missing, else []."""
    return [UNSANDBOXED] if (gates.build or gates.final) and bwrap() is None else []


@dataclass(frozen=True)
class Sandbox:
    program: str  # bwrap
    readonly: tuple[Path, ...]
    writable: tuple[Path, ...]
    pinned: tuple[Path, ...] = ()  # files inside a writable dir kept read-only
    hidden: tuple[Path, ...] = ()  # directories replaced by an empty tmpfs
    # the whole file system read-only underneath (the devices kept, /dev/shm read-only too): an agent's box
    all_readonly: bool = False
    fresh: tuple[Path, ...] = ()  # private empty tmpfs (/tmp), before `readonly` (which may lie inside)
    isolated: bool = False  # own PID (fresh /proc and /dev), IPC and UTS namespaces, a new session: a gate's box
    own_pids: bool = False  # own PID namespace and /proc only (an agent's box: no ancestor's /proc/<pid>/root to walk)
    new_session: bool = False  # no controlling terminal to push keystrokes into (TIOCSTI)
    host_proc: bool = False  # the host's /proc, writable (instead of own_pids): a nested bwrap run as root needs it
    files: tuple[tuple[Path, Path], ...] = ()  # (source, where inside): files shown read-only at another path
    rw_files: tuple[tuple[Path, Path], ...] = ()  # (source, where inside): files bound writable at another path
    network: bool = True  # False: its own network namespace (no network, no abstract unix sockets)
    env: tuple[tuple[str, str], ...] | None = None  # the whole environment inside (None: the one bwrap is given)
    masked: tuple[Path, ...] = ()  # host unix sockets still visible: each covered by /dev/null
    # writable dirs whose NEW names land in a throwaway tmpfs: what exists there when the box starts is
    # bound back, writable (or pinned). A git common dir: a `commondir` (or `hooks`) made there would
    # re-point every git of the user at a config the agent wrote; git's own lock files still work.
    veiled: tuple[Path, ...] = ()

    def wrap(self, argv: list[str], mark: dict[str, str] | None = None) -> list[str]:
        """`argv` run by bwrap; later mounts win over earlier ones, so the order is the policy. `mark`:
        variables kept through a cleared environment (the process runner's run token)."""
        out = [self.program, "--dev-bind", "/", "/"]
        if self.all_readonly:
            out = [self.program, "--ro-bind", "/", "/", *self._devices()]
        if self.host_proc:
            out += ["--bind", "/proc", "/proc"]
        elif self.isolated or self.own_pids:  # a fresh /proc also lets a client's own bwrap run inside (unprivileged)
            out += ["--unshare-pid", "--proc", "/proc"]
        if self.isolated:
            out += ["--unshare-ipc", "--unshare-uts"]
        if self.isolated or self.new_session:
            out += ["--new-session"]
        out += [] if self.network else ["--unshare-net"]
        for p in self.fresh:
            out += ["--tmpfs", str(p)]
        for p in self.readonly:
            out += ["--ro-bind", str(p), str(p)]
        for src, dest in self.files:
            out += ["--ro-bind", str(src), str(dest)]
        for src, dest in self.rw_files:
            out += ["--bind", str(src), str(dest)]
        for p in self.hidden:  # in an agent's box read-only too: a write there fails rather than vanishing unseen
            out += ["--tmpfs", str(p), *(["--remount-ro", str(p)] if self.all_readonly else [])]
        for p in self.writable:
            out += self._veil(p) if p in self.veiled else ["--bind", str(p), str(p)]
        for p in self.pinned:  # listed from a directory as the box was planned: a lock file another git held may be gone since
            out += ["--ro-bind-try", str(p), str(p)]
        for p in self.masked:
            out += ["--ro-bind", "/dev/null", str(p)]
        if self.env is not None:
            out += ["--clearenv", *(w for k, v in sorted({**dict(self.env), **(mark or {})}.items()) for w in ("--setenv", k, v))]
        return [*out, "--die-with-parent", "--", *argv]

    @staticmethod
    def _veil(d: Path) -> list[str]:
        try:
            entries = sorted(os.listdir(d))  # as late as the box starts: git may have made one since
        except OSError:
            return ["--bind", str(d), str(d)]
        return ["--tmpfs", str(d), *(w for e in entries for w in ("--bind-try", str(d / e), str(d / e)))]

    def _devices(self) -> list[str]:
        if self.isolated:
            return ["--dev", "/dev"]  # a fresh /dev: null, zero, random, tty, its own /dev/shm
        return ["--dev-bind", "/dev", "/dev", *(["--ro-bind", "/dev/shm", "/dev/shm"] if os.path.isdir("/dev/shm") else [])]


# What a gate's environment keeps (`[gates] env` adds names): where programs are, the locale, the
# virtualenv, the gate's own SPARK_* and a sealed git's identity; nothing else of the caller's.
GATE_ENV = ("PATH", "LANG", "LANGUAGE", "TZ", "VIRTUAL_ENV", "CI", "USER", "LOGNAME", "GIT_CONFIG_NOSYSTEM",
            "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE")
GATE_ENV_PREFIXES = ("LC_", "SPARK_")
PRIVATE = (Path("/tmp"), Path("/run"))  # a private tmpfs each (the user's sockets live there)


def gate_env(env: dict[str, str], extra: tuple[str, ...] = ()) -> tuple[tuple[str, str], ...]:
    """The gate's environment: the allow-list of `env`, HOME (the throwaway one, at the same path) and TMPDIR."""
    kept = {k: v for k, v in env.items() if k in GATE_ENV or k in extra or k.startswith(GATE_ENV_PREFIXES)}
    kept.update(HOME=env.get("HOME") or os.path.expanduser("~"), TMPDIR="/tmp")
    return tuple(sorted(kept.items()))


def for_gate(program: str, checkout: Path, admin_dir: Path, shown: list[Path], hidden: list[Path], env: dict[str, str],
             *, network: bool = False, env_extra: tuple[str, ...] = ()) -> Sandbox:
    """The box of a gate run in `checkout` (git admin dir `admin_dir`). `shown`: the repository's paths
    (read-only again where a private directory would hide them); `env`: the gate's environment before
    the allow-list."""
    home = Path(os.path.realpath(env.get("HOME") or os.path.expanduser("~")))
    fresh = [p for p in (*PRIVATE, home) if p.is_dir() and p != Path("/")]
    admin = Path(os.path.realpath(admin_dir))
    again = [Path(os.path.realpath(p)) for p in [*shown, *toolchain(env)] if os.path.exists(p)]
    again = [p for p in again if _under(p, [*fresh, Path("/dev")])]
    writable = (Path(os.path.realpath(checkout)), admin)
    return Sandbox(
        program=program, readonly=tuple(dict.fromkeys(again)), writable=writable,
        pinned=(*(admin / n for n in PINNED if (admin / n).exists()), *gitfile(checkout)),
        hidden=tuple(Path(os.path.realpath(h)) for h in hidden if os.path.isdir(h) and not _under(Path(os.path.realpath(h)), fresh)),
        all_readonly=True, fresh=tuple(fresh), isolated=True, network=network, env=gate_env(env, env_extra),
        masked=tuple(s for s in host_sockets() if not _under(s, [*fresh, Path("/dev")]) or _under(s, again)),
    )


def gitfile(worktree: Path) -> tuple[Path, ...]:
    """The worktree's `.git` file, pinned in every box: code that re-pointed it at a git dir of its own
    would have that dir's config (core.fsmonitor, filters) run by the next git the user runs there."""
    f = Path(os.path.realpath(worktree)) / ".git"
    return (f,) if f.is_file() else ()


def _under(p: Path, roots: list[Path]) -> bool:
    return any(p == r or r in p.parents for r in roots)


def toolchain(env: dict[str, str]) -> list[Path]:
    """What a gate runs from: the PATH directories, the virtualenv, spark-git's own Python."""
    import sys

    return [*(Path(d) for d in env.get("PATH", "").split(os.pathsep) if d), *([Path(env["VIRTUAL_ENV"])] if env.get("VIRTUAL_ENV") else []),
            Path(sys.prefix), Path(sys.base_prefix)]


def host_sockets() -> list[Path]:
    """Every unix socket with a path that this machine's processes listen on (/proc/net/unix)."""
    try:
        lines = Path("/proc/net/unix").read_text().splitlines()[1:]
    except OSError:
        return []
    found = {Path(f[7]) for f in (ln.split() for ln in lines) if len(f) >= 8 and f[7].startswith("/")}
    return sorted(p for p in found if p.exists())
