"""spark-git's own OS boundary around every client `agent run` starts (Claude Code, Codex CLI and
Gemini CLI alike; a client's own sandbox, where it has one, runs inside it): the whole client inside
bubblewrap, built by the gates' builder (core/gatebox.py). What the client, and everything it runs, sees:
- the whole file system read-only (devices kept), its own PID namespace and /proc (no ancestor's
  `/proc/<pid>/root` to walk out through; a client's own bwrap can run inside), no controlling
  terminal when headless;
- /tmp an empty private tmpfs (TMPDIR and the build tools' caches point there: BOXED_ENV), and the
  user's HOME an empty one too: of it only the client's own state (`state` in its facts: ~/.claude,
  ~/.codex or $CODEX_HOME, ~/.gemini) is there, writable, and the user's git configuration and the
  toolchain installed under HOME (the prefix of each PATH directory there) read-only — `~/.bashrc`,
  `~/.ssh`, `~/.config` and the spark-git state directory are not there;
- writable: the agent's worktree; the git writes its commit needs, those clients/gitgrants.py grants
  Claude Code's sandbox (objects, its admin dir, refs and logs with its own branch and reflog; every
  other existing ref and reflog pinned read-only, the admin dir's commondir and gitdir too, and every
  other entry of the common dir; a NEW name can be created, as there: a branch that exists only in
  packed-refs could be shadowed; the worktree's own `.git` file pinned; a new name at the common dir's
  top, `commondir` say, lands in a throwaway tmpfs, never on the host); the
  client's own home state (`state` in its facts, e.g. ~/.gemini);
- the user's spark-git state dir (approval key, approvers, verdict keys) not there at all (a tmpfs);
- the network as it is (the model server may be on 127.0.0.1).
Without bubblewrap there is no box: `agent run` refuses unless told to run unboxed (docs/decisions.md)."""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import sys
from pathlib import Path

from spark_git.clients import gitgrants
from spark_git.clients.base import Client
from spark_git.core import gatebox, paths
from spark_git.core.layout import Layout
from spark_git.state.files import write_text_atomic

PINNED = ("commondir", "gitdir")  # of the agent's admin dir: where its worktree points stays as it is
# Writable as in Claude Code's sandbox, every existing name in them but the agent's own pinned: a new
# branch (refs/heads/x and its reflog) and `git stash` (refs/stash) work; main, the task's and the
# other agents' branches, tags, notes, replace refs and spark-git's refs stay read-only.
WALKED = ("refs", "logs")
# The common dir itself is writable too, every entry in it pinned but those: git locks packed-refs
# there for a ref deletion (a rebase's end), and a client's own sandbox inside makes its mount points
# there (Codex 0.169: `.git`, `.codex`, `.agents`, `.aws` in each writable root of its profile).
PRIVATE_TMP = Path("/tmp")


def _real(p: Path | str) -> Path:
    return Path(os.path.realpath(p))


def _inside(p: Path, roots: list[Path]) -> bool:
    return any(p == r or r in p.parents for r in roots)


def for_agent(layout: Layout, c: Client, worktree: Path, env: dict[str, str], *, headless: bool = True) -> gatebox.Sandbox | None:
    """The box `c` runs in as the agent of `worktree` (with `env`, whose HOME holds its state); None
    without bubblewrap."""
    program = gatebox.bwrap()
    if program is None:
        return None
    dirs = gitgrants.git_dirs(worktree)
    walked = [dirs[1], *(dirs[1] / d for d in WALKED)] if dirs else []
    if dirs:
        gitgrants.prepare(dirs[1])  # the namespaces everybody reads exist, so that they are pinned
    allow, deny = gitgrants.grants([(worktree, None)])
    home = Path(env.get("HOME") or os.path.expanduser("~"))
    state = [d for d in c.facts.home_state(env) if not d.suffix]  # directories (~/.claude): shared, as the client shares them
    for d in state:
        d.mkdir(parents=True, exist_ok=True)  # a bind needs it to exist; the client would create it anyway
    copies = _own_copies(c, worktree, env)
    grant: list[Path] = [*walked, *map(Path, allow), *state]
    writable = [_real(worktree), *(_real(p) for p in grant if p.exists())]
    pinned = [_real(p) for p in deny if _inside(_real(p), writable)]
    pinned += [dirs[0] / n for n in PINNED if dirs and (dirs[0] / n).exists()]
    pinned += gatebox.gitfile(worktree)  # where the worktree's git dir is stays as it is, too
    secret = paths.state_dir()
    secret.mkdir(parents=True, exist_ok=True, mode=0o700)  # hidden even if it is created while the agent runs
    fresh = [PRIVATE_TMP, *([_real(home)] if _real(home) != Path("/") and os.path.isdir(home) else [])]
    profile = _login_profile(Path(layout.repo.common_dir), worktree, env)
    files = tuple((profile, home / name) for name in LOGIN_FILES) if len(fresh) > 1 else ()
    # shown again (read-only) over the private /tmp and HOME, in case they live there
    shown: list[Path] = [layout.main_worktree, Path(layout.repo.common_dir), layout.tasks_root, *_programs(env, home), *_git_config(home)]
    return gatebox.Sandbox(program=program, readonly=tuple(dict.fromkeys(_real(p) for p in shown if os.path.exists(p) and _inside(_real(p), fresh))),
                           writable=tuple(dict.fromkeys(writable)), pinned=tuple(dict.fromkeys(pinned)), hidden=(_real(secret),),
                           all_readonly=True, fresh=tuple(fresh), own_pids=True, new_session=headless, host_proc=_nests_as_root(c),
                           files=files, rw_files=tuple(copies), veiled=tuple(_real(d[1]) for d in [dirs] if d))


def _own_copies(c: Client, worktree: Path, env: dict[str, str]) -> list[tuple[Path, Path]]:
    """The client's state files in HOME (~/.claude.json) as this agent's own copy, bound writable at
    their place: clients rewrite them under a lock file beside them, which each box's private HOME would
    not share, so agents running side by side would write one file at once. (copy, place in HOME)."""
    out = []
    for f in (p for p in c.facts.home_state(env) if p.suffix):
        copy = worktree.parent / "box-home" / f.name
        copy.parent.mkdir(parents=True, exist_ok=True)
        if f.is_file() and not copy.exists():
            shutil.copy2(f, copy)
        if copy.is_file():
            out.append((copy, f))
    return out


# A login shell (Codex CLI runs `bash -lc`) reads /etc/profile, which may reset PATH, then the first
# of these in HOME: in the box, they give the agent's PATH (the project's virtualenv) back.
LOGIN_FILES = (".bash_profile", ".profile")


def _login_profile(common: Path, worktree: Path, env: dict[str, str]) -> Path:
    """The profile a login shell in the box reads, written under spark-git's records (no agent writes there)."""
    lines = ["# spark-git: the agent's PATH and virtualenv, kept through /etc/profile (ops/life/agentbox.py)",
             *(f"export {k}={shlex.quote(env[k])}" for k in ("PATH", "VIRTUAL_ENV") if env.get(k))]
    path = common / "spark" / "box-profiles" / (hashlib.sha256(str(_real(worktree)).encode()).hexdigest()[:16] + ".sh")
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, "\n".join(lines) + "\n")
    return path


def _nests_as_root(c: Client) -> bool:
    """Run as root, a client whose own bwrap makes a user namespace (Claude Code's) cannot mount its
    /proc over the one a privileged bwrap mounts (it covers /proc/irq and /proc/bus, so the kernel
    finds no fully visible /proc); it gets the host's instead, and its commands their own PID
    namespace from its sandbox (docs/decisions.md)."""
    return c.facts.sandbox is not None and c.facts.sandbox.userns and os.geteuid() == 0


def _programs(env: dict[str, str], home: Path) -> list[Path]:
    """What the client and its hooks run from, where the private /tmp or HOME would hide it (a
    checkout or a venv under /tmp: the hook's `spark-git` was "command not found" there; a client
    installed under ~/.nvm or ~/.local): spark-git's Python, its package, and the PATH directories —
    under HOME their parent (`~/.nvm/versions/node/v22` for its `bin`, `~/.pyenv` for its shims),
    where a program's own files sit beside them."""
    found = [Path(sys.prefix), Path(sys.base_prefix), Path(__file__).resolve().parents[2]]
    for d in (Path(d) for d in env.get("PATH", "").split(os.pathsep) if d):
        under_home = _inside(_real(d), [_real(home)]) and _real(d) != _real(home)
        found.append(d.parent if under_home and _real(d.parent) != _real(home) else d)  # ~/.pyenv/shims: ~/.pyenv
    return found


def _git_config(home: Path) -> list[Path]:
    """The user's git configuration, read-only: the agent's commits carry the user's identity."""
    return [home / ".gitconfig", home / ".config" / "git"]


# Inside the box: temp files and the caches build tools write under HOME (pip, go: XDG_CACHE_HOME;
# npm: ~/.npm), which is read-only there, in the private /tmp.
BOXED_ENV = {"TMPDIR": str(PRIVATE_TMP), "XDG_CACHE_HOME": str(PRIVATE_TMP / ".cache"), "npm_config_cache": str(PRIVATE_TMP / ".npm")}


def boxed_env(env: dict[str, str]) -> dict[str, str]:
    """The client's environment inside the box."""
    return {**env, **BOXED_ENV}
