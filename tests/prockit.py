"""Waiting on processes without sleeping: FIFOs a child writes its pids to, pidfds, /proc."""

from __future__ import annotations

import os
import select
from pathlib import Path


def read_fifo(fifo: Path, deadline_s: float = 60) -> str:
    """What a writer puts in `fifo` (blocks until it does; fails after `deadline_s`)."""
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        ready, _, _ = select.select([fd], [], [], deadline_s)
        assert ready, f"nobody wrote to {fifo}"
        return os.read(fd, 256).decode().strip()
    finally:
        os.close(fd)


def running(pid: int) -> bool:
    """`pid` exists and has not exited (a zombie has)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_gone(pid: int, deadline_s: float = 30) -> bool:
    """True once `pid` has exited; for processes that are not our children (pidfd, no polling)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        gone, _, _ = select.select([fd], [], [], deadline_s)
        return bool(gone)
    finally:
        os.close(fd)


def with_marker(marker: str) -> list[int]:
    """Live processes whose argv contains `marker`."""
    found = []
    for name in os.listdir("/proc"):
        try:
            if name.isdigit() and marker.encode() in Path(f"/proc/{name}/cmdline").read_bytes() and running(int(name)):
                found.append(int(name))
        except OSError:
            continue
    return found


def daemon_gate(fifo: Path, marker: str) -> str:
    """A shell command line that starts a `setsid` daemon (leaving the gate's process group) with a
    child of its own, waits until it is up, and exits 0. The daemon writes "<its pid> <child pid>"."""
    return (f"setsid sh -c 'sleep 300 & echo \"$$ $!\" > \"$1\"; wait' {marker} {fifo} & "
            f"read pids < {fifo}; echo \"$pids\" > {fifo}.pids")
