"""Drives a spark-git command whose stdin/stdout/stderr are a pseudo-terminal (the human paths)."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import termios
import time
from pathlib import Path

from fixtures.repo import spark_argv

BOUND_S = 60.0


def _read(master: int, deadline: float) -> bytes:
    """One chunk from the terminal; b"" once the child closed it. Fails past the deadline."""
    ready, _, _ = select.select([master], [], [], max(0.0, deadline - time.monotonic()))
    assert ready, "no output from the command on its terminal in time"
    try:
        return os.read(master, 4096)
    except OSError:  # EIO: the child closed the terminal
        return b""


def answer_on_pty(cwd: Path, args: list[str], typed: bytes, session: str = "s1") -> tuple[int, str]:
    """Runs `spark-git ARGS` on a pseudo-terminal and types `typed` after its "Type the task name" prompt."""
    master, slave = pty.openpty()
    env = dict(os.environ, SPARK_SESSION_ID=session)
    proc = subprocess.Popen(spark_argv(*args), cwd=cwd, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)
    os.close(slave)
    deadline = time.monotonic() + BOUND_S
    seen = b""
    try:
        while b"Type the task name" not in seen:  # wait for the prompt, then answer it
            chunk = _read(master, deadline)
            assert chunk, seen
            seen += chunk
        os.write(master, typed)
        while chunk := _read(master, deadline):
            seen += chunk
    except BaseException:
        proc.kill()  # leave nothing behind a failed test
        proc.wait()
        raise
    finally:
        os.close(master)
    return proc.wait(timeout=BOUND_S), seen.decode(errors="replace")


def run_on_pty(cwd: Path, args: list[str], session: str = "s1", cols: int = 250) -> tuple[int, str]:
    """Runs `spark-git ARGS` with stdin, stdout and stderr on a pseudo-terminal of `cols` columns; (exit code, what it showed)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, cols, 0, 0))
    env = dict(os.environ, SPARK_SESSION_ID=session)
    proc = subprocess.Popen(spark_argv(*args), cwd=cwd, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)
    os.close(slave)
    deadline = time.monotonic() + BOUND_S
    seen = b""
    try:
        while chunk := _read(master, deadline):
            seen += chunk
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    finally:
        os.close(master)
    return proc.wait(timeout=BOUND_S), seen.decode(errors="replace")
