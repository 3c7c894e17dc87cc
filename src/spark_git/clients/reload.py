"""Which of a few files another process opens or reads, in order, through Linux inotify: how
`hook worktree-create` sees Claude Code rebuild its sandbox with a grant spark-git just wrote (the
rebuild reads the granted worktree's `.git` file; clients/claude/settle.py says why that is enough).

Standard library only (ctypes); None where inotify is not there (not Linux)."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import select
import struct
import time
from pathlib import Path

IN_ACCESS = 0x001
IN_OPEN = 0x020
# A directory's entries changed: what `spark-git watch` redraws on (ops/views/watch.py watched_dirs).
IN_CHANGED = 0x002 | 0x008 | 0x040 | 0x080 | 0x100 | 0x200  # MODIFY, CLOSE_WRITE, MOVED_FROM/TO, CREATE, DELETE
EVENT = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len (then len bytes of name)


class Watch:
    """Opens and reads of a few files, seen from the moment the watch exists; a context manager."""

    def __init__(self, fd: int, paths: dict[int, Path]) -> None:
        self.fd, self.paths = fd, paths
        self.pending: list[Path] = []

    def __enter__(self) -> Watch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        os.close(self.fd)

    def next_read(self, timeout: float) -> Path | None:
        """The next of the files opened or read, in order; None after `timeout` seconds without one."""
        end = time.monotonic() + timeout
        while not self.pending and (left := end - time.monotonic()) > 0:
            if select.select([self.fd], [], [], left)[0]:
                self.pending += self._events()
        return self.pending.pop(0) if self.pending else None

    def _events(self) -> list[Path]:
        try:
            buf = os.read(self.fd, 65536)
        except BlockingIOError:
            return []
        out, at = [], 0
        while at + EVENT.size <= len(buf):
            wd, _, _, size = EVENT.unpack_from(buf, at)
            at += EVENT.size + size
            out += [self.paths[wd]] if wd in self.paths else []
        return out


def watch(paths: list[Path], mask: int = IN_OPEN | IN_ACCESS) -> Watch | None:
    """A watch on `paths` (existing files) for opens and reads by any process (or the events of
    `mask`); None without inotify (not Linux) or when a watch cannot be set."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name, use_errno=True)
        fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
    except (OSError, AttributeError):
        return None
    if fd < 0:
        return None
    wds = {libc.inotify_add_watch(fd, os.fsencode(p), mask): p for p in paths}
    if any(wd < 0 for wd in wds):
        os.close(fd)
        return None
    return Watch(fd, wds)
