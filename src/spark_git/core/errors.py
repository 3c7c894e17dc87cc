"""Exception hierarchy; the exit code of every failure is decided here and nowhere else."""

from __future__ import annotations

import signal

TYPE_CHECKING = False  # not typing's: importing typing costs the hook and status-line fast paths ~3 ms
if TYPE_CHECKING:
    from typing import Any

OK = 0
FAIL = 1
USAGE = 2
BLOCKED = 3
INTERNAL = 70
INTERRUPTED = 130  # Ctrl-C (SIGINT): 128 + 2, what shells and CI expect
BROKEN_PIPE = 141  # stdout closed by its reader (`| head`), as a shell reports SIGPIPE
INTERRUPTED_MESSAGE = "interrupted (Ctrl-C); run `spark-git doctor` to see whether anything was left half-done"


class Interrupted(BaseException):
    """Ctrl-C, raised by the entry point's SIGINT handler. Not a KeyboardInterrupt: click turns that into
    "Aborted!" and exit 1 when it strikes outside a command (parsing, loading the command's module)."""


class CtrlC:
    """The SIGINT handler the entry point installs: raises Interrupted, and remembers that it did.
    Python drops an exception raised inside fork's at-fork callbacks ("Exception ignored in ..."),
    which run whenever a child starts with a preexec function (core/proc.py): such a Ctrl-C would be
    lost and the command would wait on its gate. `raise_if_dropped` raises it again."""

    def __init__(self) -> None:
        self.struck = False

    def __call__(self, signum: int, frame: object) -> None:
        self.struck = True
        raise Interrupted()


def raise_if_dropped() -> None:
    """Raises Interrupted if Ctrl-C struck in this process's command and Python swallowed it."""
    handler = signal.getsignal(signal.SIGINT)
    if isinstance(handler, CtrlC) and handler.struck:
        raise Interrupted()


class SparkError(Exception):
    """A failure the user can act on. `hint` and `next` say what to do about it."""

    exit_code = FAIL
    status = "FAIL"

    def __init__(
        self,
        message: str,
        *,
        hint: str | None = None,
        next: list[str] | None = None,
        details: dict[str, Any] | None = None,
        task: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.next = next or []
        self.details = details or {}
        self.task = task


class Failed(SparkError):
    """A gate or a git operation failed (exit 1)."""


class BadInput(SparkError):
    """Bad names, bad paths, bad config, wrong usage (exit 2). Nothing was changed."""

    exit_code = USAGE
    status = "FAIL"


class Blocked(SparkError):
    """A lock, ownership, state or approval precondition is not met (exit 3)."""

    exit_code = BLOCKED
    status = "BLOCKED"


class CorruptState(Blocked):
    """A state file exists but cannot be read; the task is blocked until a human or `doctor` looks."""

    def __init__(self, path: str, problem: str, **kw: Any) -> None:
        super().__init__(
            f"{path} is corrupt: {problem}",
            hint="inspect the file, or run `spark-git doctor` to see what can be repaired",
            next=["spark-git doctor"],
            details={"path": path, "problem": problem},
            **kw,
        )


class GitError(Failed):
    """git exited non-zero. Keeps the command and git's own stderr, always."""

    def __init__(self, argv: list[str], returncode: int, stderr: str, cwd: str | None = None, stdout: str = "") -> None:
        self.argv = argv
        self.returncode = returncode
        self.stderr = stderr.strip()
        self.stdout = stdout
        self.cwd = cwd
        cmd = " ".join(argv)
        msg = f"`{cmd}` failed (exit {returncode})"
        if self.stderr:
            msg += f":\n{self.stderr}"
        super().__init__(msg, details={"argv": argv, "returncode": returncode, "stderr": self.stderr, "cwd": cwd})


_READ_ONLY = (13, 1, 30)  # EACCES, EPERM, EROFS: where spark-git must write, it may not
_FULL = (28, 122)  # ENOSPC, EDQUOT


def from_os_error(e: OSError) -> SparkError | None:
    """A refusal of the file system spark-git can name (read-only, no permission, disk full), or None:
    anything else stays an internal error. Writes are atomic (state/files.py): nothing is half-written."""
    where = f" {e.filename}" if e.filename else ""
    if e.errno in _READ_ONLY:
        return BadInput(f"cannot write{where}: {e.strerror}", hint="spark-git writes the repository's git directory and the tasks root: make them writable, then run it again",
                        next=["spark-git doctor"], details={"path": str(e.filename) if e.filename else None})
    if e.errno in _FULL:
        return Failed(f"cannot write{where}: {e.strerror}", hint="free some space, then run the command again; `spark-git doctor` shows anything left half-done",
                      next=["spark-git doctor"], details={"path": str(e.filename) if e.filename else None})
    return None
