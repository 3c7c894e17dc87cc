"""Drives a spark-git command whose stdin/stdout/stderr are a pseudo-terminal (the human paths)."""

from __future__ import annotations

import os
import pty
import subprocess
from pathlib import Path

from fixtures.repo import spark_argv


def answer_on_pty(cwd: Path, args: list[str], typed: bytes, session: str = "s1") -> tuple[int, str]:
    """Runs `spark-git ARGS` on a pseudo-terminal and types `typed` after its "Type the task name" prompt."""
    master, slave = pty.openpty()
    env = dict(os.environ, SPARK_SESSION_ID=session)
    proc = subprocess.Popen(spark_argv(*args), cwd=cwd, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)
    os.close(slave)
    seen = b""
    while b"Type the task name" not in seen:  # wait for the prompt, then answer it
        chunk = os.read(master, 4096)
        assert chunk, seen
        seen += chunk
    os.write(master, typed)
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    return proc.wait(timeout=60), seen.decode(errors="replace")
