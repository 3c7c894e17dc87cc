"""What a gate ran with, outside its tree: part of the verdict's fingerprint, so a verdict is reused
only by the same toolchain. Cheap by design (a few stat calls and one directory listing), because it
is computed on every lookup. What it covers:
- the command's executable, resolved on the gate's PATH: its path, mtime and size (an upgraded
  interpreter or tool changes it); a string command also names /bin/sh;
- a Python virtual environment that executable lives in (`<venv>/bin/x` beside `pyvenv.cfg`): the
  digest of pyvenv.cfg (the interpreter's version) and of its site-packages listing, each
  `*.dist-info` with its RECORD's size (installing, removing or upgrading a library changes it).
Files in the tree (uv.lock, poetry.lock, requirements*.txt, package-lock.json, the gate's scripts)
are covered by the tree id itself. Not covered: a library file edited in place without reinstalling,
tools the command finds by itself (not its argv[0]), the network (docs/merging.md)."""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
from pathlib import Path
from typing import Any

from spark_git.core.config import Command

SHELL = "/bin/sh"  # what core.proc runs a string command with


def _program(command: Command) -> str | None:
    """argv[0] of a list; the first word of a shell line that is not `VAR=value`."""
    if isinstance(command, list):
        return command[0] if command else None
    try:
        words = shlex.split(str(command), posix=True)
    except ValueError:  # unbalanced quotes: the shell will say so
        return None
    return next((w for w in words if not (("=" in w) and w.split("=", 1)[0].isidentifier())), None)


def _stat(path: str) -> dict[str, Any]:
    try:
        st = os.stat(path)
    except OSError:
        return {"path": path, "missing": True}
    return {"path": path, "mtime_ns": st.st_mtime_ns, "size": st.st_size}


def _venv(program: Path) -> dict[str, Any] | None:
    """The venv `program` lives in (not following its symlink: a venv's python links to the base one)."""
    root = program.parent.parent
    cfg = root / "pyvenv.cfg"
    try:
        cfg_text = cfg.read_bytes()
    except OSError:
        return None
    listing = []
    for site in sorted(root.glob("lib*/python*/site-packages")):
        for name in sorted(os.listdir(site)):
            size = -1
            if name.endswith(".dist-info"):
                try:
                    size = os.stat(site / name / "RECORD").st_size
                except OSError:
                    pass
            listing.append(f"{site.relative_to(root)}/{name}:{size}")
    return {"pyvenv_cfg": hashlib.sha256(cfg_text).hexdigest(), "site_packages": hashlib.sha256("\n".join(listing).encode()).hexdigest()}


def fingerprint(command: Command, env: dict[str, str], cwd: Path | None = None) -> dict[str, Any]:
    """The toolchain facts of `command` run with `env` (its PATH) in `cwd`. A relative path names a
    file in the worktree: its name and, if it sits in a venv there (`.venv/bin/pytest`), that venv's
    listing, not its times, so the same tree gated in another worktree with the same venv matches."""
    out: dict[str, Any] = {}
    if not isinstance(command, list):
        out["shell"] = _stat(SHELL)
    program = _program(command)
    if not program:
        return out
    if "/" in program and not os.path.isabs(program):
        out["program"] = {"path": program, "in_worktree": True}
        venv = _venv(cwd / program) if cwd is not None else None
        if venv is not None:
            out["venv"] = venv
        return out
    found = program if os.path.isabs(program) else shutil.which(program, path=env.get("PATH", os.defpath))
    if found is None:
        out["program"] = {"path": program, "missing": True}
        return out
    out["program"] = _stat(found)
    venv = _venv(Path(found))
    if venv is not None:
        out["venv"] = venv
    return out
