"""spark-git's own OS boundary for a client that has none it can configure (its facts: `own_box`
False, e.g. Gemini CLI 0.61), when `agent run` starts it: the whole client inside bubblewrap, built
by the gates' builder (core/gatebox.py). What the client, and everything it runs, sees:
- the whole file system read-only (devices kept), /tmp an empty private tmpfs (TMPDIR and the build
  tools' caches point there: BOXED_ENV) over which what runs from there is shown again read-only;
- writable: the agent's worktree; the git writes its commit needs, those clients/gitgrants.py grants
  Claude Code's sandbox (objects, its admin dir, refs and logs with its own branch and reflog; every
  other existing ref and reflog pinned read-only, the admin dir's commondir and gitdir too; a NEW
  name can be created, as there: a branch that exists only in packed-refs could be shadowed); the
  client's own home state (`state` in its facts, e.g. ~/.gemini);
- the user's spark-git state dir (approval key, approvers, verdict keys) not there at all (a tmpfs);
- the network as it is (the model server may be on 127.0.0.1).
Without bubblewrap there is no box: `agent run` refuses unless told to run unboxed (docs/decisions.md)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from spark_git.clients import gitgrants
from spark_git.clients.base import Client
from spark_git.core import gatebox, paths
from spark_git.core.layout import Layout

PINNED = ("commondir", "gitdir")  # of the agent's admin dir: where its worktree points stays as it is
# Writable as in Claude Code's sandbox, every existing name in them but the agent's own pinned: a new
# branch (refs/heads/x and its reflog) and `git stash` (refs/stash) work; main, the task's and the
# other agents' branches, tags, notes, replace refs and spark-git's refs stay read-only.
WALKED = ("refs", "logs")
PRIVATE_TMP = Path("/tmp")


def wanted(c: Client) -> bool:
    """spark-git must box this client itself: it declares no OS sandbox of its own."""
    return not c.facts.own_box


def _real(p: Path | str) -> Path:
    return Path(os.path.realpath(p))


def _inside(p: Path, roots: list[Path]) -> bool:
    return any(p == r or r in p.parents for r in roots)


def for_agent(layout: Layout, c: Client, worktree: Path, env: dict[str, str]) -> gatebox.Sandbox | None:
    """The box `c` runs in as the agent of `worktree` (with `env`, whose HOME holds its state); None
    without bubblewrap."""
    program = gatebox.bwrap()
    if program is None:
        return None
    dirs = gitgrants.git_dirs(worktree)
    walked = [dirs[1] / d for d in WALKED] if dirs else []
    if dirs:
        gitgrants.prepare(dirs[1])  # the namespaces everybody reads exist, so that they are pinned
    allow, deny = gitgrants.grants([(worktree, None)])
    home = Path(env.get("HOME") or os.path.expanduser("~"))
    state = [home / s[2:] for s in c.facts.state if s.startswith("~/")]
    for d in state:
        d.mkdir(parents=True, exist_ok=True)  # a bind needs it to exist; the client would create it anyway
    grant: list[Path] = [*walked, *map(Path, allow), *state]
    writable = [_real(worktree), *(_real(p) for p in grant if p.exists())]
    pinned = [_real(p) for p in deny if _inside(_real(p), writable)]
    pinned += [dirs[0] / n for n in PINNED if dirs and (dirs[0] / n).exists()]
    secret = paths.state_dir()
    secret.mkdir(parents=True, exist_ok=True, mode=0o700)  # hidden even if it is created while the agent runs
    # shown again (read-only) over the private /tmp, in case they live there
    shown: list[Path] = [layout.main_worktree, Path(layout.repo.common_dir), layout.tasks_root, home, *_programs(env)]
    return gatebox.Sandbox(program=program, readonly=tuple(dict.fromkeys(_real(p) for p in shown if os.path.exists(p))),
                           writable=tuple(dict.fromkeys(writable)), pinned=tuple(dict.fromkeys(pinned)), hidden=(_real(secret),),
                           all_readonly=True, fresh=(PRIVATE_TMP,))


def _programs(env: dict[str, str]) -> list[Path]:
    """What the client and its hooks run from, where the private /tmp would hide it (a checkout or a
    venv under /tmp: the hook's `spark-git` was "command not found" there): spark-git's Python, its
    package and the PATH directories."""
    found = [Path(sys.prefix), Path(sys.base_prefix), Path(__file__).resolve().parents[2],
             *(Path(d) for d in env.get("PATH", "").split(os.pathsep) if d)]
    return [p for p in found if _inside(_real(p), [PRIVATE_TMP])]


# Inside the box: temp files and the caches build tools write under HOME (pip, go: XDG_CACHE_HOME;
# npm: ~/.npm), which is read-only there, in the private /tmp.
BOXED_ENV = {"TMPDIR": str(PRIVATE_TMP), "XDG_CACHE_HOME": str(PRIVATE_TMP / ".cache"), "npm_config_cache": str(PRIVATE_TMP / ".npm")}


def boxed_env(env: dict[str, str]) -> dict[str, str]:
    """The client's environment inside the box."""
    return {**env, **BOXED_ENV}
