"""The gates' sandbox: bubblewrap (bwrap) around a gate command, so the agent's code it runs cannot
move a ref or write outside the worktree it is gated in. What the gate sees:
- the whole file system as it is (network too: a gate may need a package index), except
- the repository read-only: the main worktree, the common git dir (refs, objects, notes, config,
  hooks), the tasks root (every other worktree, task.json, the queue);
- writable again on top: the worktree being gated, and its admin dir under `.git/worktrees/<id>`
  (git writes the index and index.lock there; `git status` inside a gate needs it), with that
  admin dir's HEAD, commondir and gitdir read-only (the gate cannot re-point its worktree);
- the user's spark-git state dir hidden (an empty tmpfs): it holds the verdict key.
Temp directories outside the repository stay writable as everywhere else. Without bwrap the gate
runs as before, unsandboxed, and `status`/`hooks check` say so. SPARK_BWRAP names the bwrap to use
(empty: none; a seam for tests and for machines where bwrap is elsewhere). The same builder boxes a
client that has no sandbox of its own under `agent run` (ops/life/agentbox.py: `all_readonly`, `fresh`)."""

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

    def wrap(self, argv: list[str]) -> list[str]:
        """`argv` run by bwrap; later mounts win over earlier ones, so the order is the policy."""
        out = [self.program, "--dev-bind", "/", "/"]
        if self.all_readonly:
            out = [self.program, "--ro-bind", "/", "/", "--dev-bind", "/dev", "/dev"]
            out += ["--ro-bind", "/dev/shm", "/dev/shm"] if os.path.isdir("/dev/shm") else []
        for p in self.fresh:
            out += ["--tmpfs", str(p)]
        for p in self.readonly:
            out += ["--ro-bind", str(p), str(p)]
        for p in self.hidden:  # in an agent's box read-only too: a write there fails rather than vanishing unseen
            out += ["--tmpfs", str(p), *(["--remount-ro", str(p)] if self.all_readonly else [])]
        for p in self.writable:
            out += ["--bind", str(p), str(p)]
        for p in self.pinned:
            out += ["--ro-bind", str(p), str(p)]
        return [*out, "--die-with-parent", "--", *argv]


def for_gate(program: str, worktree: Path, admin_dir: Path, repo_paths: list[Path], hidden: list[Path]) -> Sandbox:
    """The sandbox of a gate run in `worktree` (git admin dir `admin_dir`): `repo_paths` read-only."""
    real = [Path(os.path.realpath(p)) for p in repo_paths if os.path.exists(p)]
    admin = Path(os.path.realpath(admin_dir))
    own = (admin,) if admin not in real else ()  # the main worktree's admin dir is the common dir: never writable
    return Sandbox(
        program=program, readonly=tuple(dict.fromkeys(real)),
        writable=(Path(os.path.realpath(worktree)), *own),
        pinned=tuple(admin / n for n in PINNED if own and (admin / n).exists()),
        hidden=tuple(Path(os.path.realpath(h)) for h in hidden if os.path.isdir(h)),
    )
