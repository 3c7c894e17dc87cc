"""One long-lived `git cat-file --batch` for commands that read many objects."""

from __future__ import annotations

import subprocess
from pathlib import Path

from spark_git.core import faults
from spark_git.core.errors import BadInput, GitError


class ObjectReader:
    """One long-lived `git cat-file --batch` answering object reads in order: one process for a
    command that reads many commits or notes, not one per object. Use in a `with` block."""

    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        self.cwd, self.env = cwd, env
        self._proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> ObjectReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _start(self) -> subprocess.Popen[bytes]:
        if self._proc is None:
            if not self.cwd.is_dir():
                raise BadInput(f"not a directory: {self.cwd}")
            try:
                self._proc = subprocess.Popen(["git", "cat-file", "--batch"], cwd=self.cwd, env=self.env,
                                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            except FileNotFoundError as e:
                raise BadInput("git is not installed or not on PATH", hint="install git, or put it on PATH, and retry") from e
        return self._proc

    def read(self, rev: str) -> tuple[str, bytes] | None:
        """(type, content) of the object `rev` names; None when there is none."""
        if not rev or "\n" in rev:
            return None
        p = self._start()
        assert p.stdin is not None and p.stdout is not None
        p.stdin.write(rev.encode() + b"\n")
        p.stdin.flush()
        header = p.stdout.readline().decode(errors="replace").split()
        if len(header) != 3:  # "<rev> missing" / "<rev> ambiguous"
            if not header:
                raise GitError(["git", "cat-file", "--batch"], p.poll() or -1, "git cat-file --batch stopped answering", str(self.cwd))
            return None
        data = p.stdout.read(int(header[2]) + 1)[:-1]
        return header[1], data

    def commit_exists(self, sha: str) -> bool:
        obj = self.read(sha)
        return obj is not None and obj[0] == "commit"

    def close(self) -> None:
        if self._proc is None:
            return
        p, self._proc = self._proc, None
        assert p.stdin is not None and p.stdout is not None
        p.stdin.close()
        p.wait()
        p.stdout.close()
        faults.after_git()
