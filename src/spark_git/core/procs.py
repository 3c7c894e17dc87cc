"""This user's processes as /proc shows them: which programs run where, and whether each runs in a
box of its own (a mount namespace other than ours). Linux only; elsewhere nothing is found."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

# Interpreters a client may be started through (`node /usr/bin/gemini`, a `#!/bin/sh` stand-in):
# the program is then their first argument.
INTERPRETERS = ("node", "nodejs", "bun", "sh", "bash", "dash", "python", "python3")


@dataclass(frozen=True)
class Proc:
    pid: int
    program: str  # the base name of what runs (through an interpreter: its script)
    cwd: Path
    boxed: bool  # in a mount namespace of its own (bubblewrap, a container): not the user's file system


def running(programs: set[str]) -> list[Proc]:
    """The processes of this user whose program is one of `programs`."""
    try:
        mine, pids = os.readlink("/proc/self/ns/mnt"), [int(d) for d in os.listdir("/proc") if d.isdigit()]
    except OSError:
        return []
    out = []
    for pid in pids:
        p = _one(pid, programs, mine)
        if p is not None:
            out.append(p)
    return out


def _one(pid: int, programs: set[str], mine: str) -> Proc | None:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        prog = os.path.basename(argv[0].decode(errors="replace"))
        if prog in INTERPRETERS and len(argv) > 1:
            prog = os.path.basename(argv[1].decode(errors="replace"))
        if prog not in programs:
            return None
        return Proc(pid, prog, Path(os.readlink(f"/proc/{pid}/cwd")), os.readlink(f"/proc/{pid}/ns/mnt") != mine)
    except (OSError, IndexError):
        return None  # gone, or another user's
