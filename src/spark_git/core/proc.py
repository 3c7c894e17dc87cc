"""The one runner of child processes that must not outlive their run: gates and setup commands.

The child gets its own process group (killed whole at the end, on timeout and on Ctrl-C), dies with
us (PR_SET_PDEATHSIG), and a watchdog kills its group if we are SIGKILLed (or SIGTERMed: no cleanup
runs then either). While it runs we are a child subreaper (Linux), so what it daemonized with
`setsid` (out of its group) is re-parented to us and killed too; once we are gone, the watchdog finds
such daemons by the run's token in their environment (SPARK_RUN_TOKEN). Without /proc or prctl this
degrades to the group kill."""

from __future__ import annotations

import math
import os
import select
import shutil
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Protocol

from spark_git.core.config import Command
from spark_git.core.errors import raise_if_dropped
from spark_git.core.gatebox import Sandbox
from spark_git.core.git import clean_env

RUN_TOKEN = "SPARK_RUN_TOKEN"  # in the child's environment, a token of this run (see WATCHDOG)
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
PR_GET_CHILD_SUBREAPER = 37
MAX_POLL_MS = 2**31 - 1  # poll()'s limit (24 days): a longer timeout waits in rounds
MAX_STRAY_ROUNDS = 100  # each round reaps at least one process; bounds a pathological fork loop


@dataclass(frozen=True)
class Result:
    exit_code: int  # negative: killed by that signal (-9 after a timeout); 127: could not start
    timed_out: bool
    duration_s: float
    error: str | None = None  # could not start: "cannot run 'x': No such file or directory"
    os_error: str | None = None  # that OSError as Python prints it (setup logs show it as is)


class Ticker(Protocol):
    """Shows a running child on a terminal (the CLI decides whether there is one)."""

    def tick(self, elapsed_s: float, last_line: str) -> None: ...
    def done(self) -> None: ...


def last_line(path: Path, window: int = 4096) -> str:
    """The last non-empty line of the file (its last `window` bytes are enough)."""
    try:
        with open(path, "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - window))
            data = f.read()
    except OSError:
        return ""
    lines = [ln.strip() for ln in data.decode(errors="replace").splitlines() if ln.strip()]
    return lines[-1] if lines else ""


@contextmanager
def ticking(log_path: Path, ticker: Ticker | None, every_s: float = 1.0) -> Iterator[None]:
    """While open, a thread calls `ticker.tick(elapsed, last line of the log)` every `every_s`;
    `ticker.done()` once it closes. Nothing at all without a ticker."""
    if ticker is None:
        yield
        return
    stop, t0 = threading.Event(), time.monotonic()

    def loop() -> None:
        while not stop.wait(every_s):
            ticker.tick(time.monotonic() - t0, last_line(log_path))

    thread = threading.Thread(target=loop, name="spark-git-ticker", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        ticker.done()


def argv_of(command: Command) -> list[str]:
    """A list is the argv; a string is a shell command line."""
    if isinstance(command, list):
        return list(command)
    return ["/bin/sh", "-c", str(command)]


def run(argv: list[str], cwd: Path, log: BinaryIO, timeout_s: float, env: dict[str, str] | None = None,
        started: Callable[[], None] = lambda: None, err: BinaryIO | None = None, sandbox: Sandbox | None = None) -> Result:
    """Runs `argv` in `cwd` with stdout and stderr to `log` (stderr to `err` if given: a CLI whose
    stdout is parsed); returns when it and everything it started are gone. `started` runs once the
    child is up, before the timeout starts counting. `sandbox`: run it inside bwrap (core/gatebox.py);
    bwrap is the child, in the same process group as the command, so every kill below reaches both."""
    t0 = time.monotonic()
    mark = uuid.uuid4().hex  # every descendant inherits it (unless it clears its environment): the watchdog's mark
    child_env = {**(env if env is not None else clean_env()), RUN_TOKEN: mark}
    if sandbox is not None:
        missing = _not_found(argv[0], cwd, child_env)
        if missing:  # as Popen says it: bwrap's own message (exit 1) would not read as "not found"
            return Result(127, False, round(time.monotonic() - t0, 3), f"cannot run {argv[0]!r}: {missing}", missing)
        argv = sandbox.wrap(argv, {RUN_TOKEN: mark})
    sib = SIBLINGS.get()
    with subreaper():
        try:
            proc, watchdog, keep = _spawn(argv, cwd, log, err, child_env, mark, sib)
        except OSError as e:  # command not found, not executable, no such cwd
            return Result(127, False, round(time.monotonic() - t0, 3), f"cannot run {argv[0]!r}: {e.strerror or e}", str(e))
        timed_out = False
        try:
            raise_if_dropped()  # a Ctrl-C during the fork is lost by Python: raised here, the child is stopped
            started()
            _wait(proc, timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:  # normal exit, timeout or Ctrl-C alike: nothing the child started survives it
            _kill_group(proc)
            _stop(watchdog)  # its job is done: stop it before it could signal a reused group id
            _sweep(sib, keep, {proc.pid, *([watchdog.pid] if watchdog else [])}, mark)
    assert proc.returncode is not None
    return Result(proc.returncode, timed_out, round(time.monotonic() - t0, 3))


def _wait(proc: subprocess.Popen[bytes], timeout_s: float) -> None:
    """proc.wait(timeout=timeout_s), woken the moment the child exits: a pidfd (Linux 5.3+) turns
    readable then. Popen.wait with a timeout polls with sleeps of up to 50 ms, which every gate paid
    at its end. Raises subprocess.TimeoutExpired as Popen.wait does."""
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # not Linux, an old kernel, or already reaped
        proc.wait(timeout=timeout_s)
        return
    try:
        poller = select.poll()  # not select.select: a process with many files open has fds past FD_SETSIZE
        poller.register(fd, select.POLLIN)
        deadline = time.monotonic() + timeout_s
        while not poller.poll(min(MAX_POLL_MS, max(0, math.ceil((deadline - time.monotonic()) * 1000)))):  # EINTR: retried; Ctrl-C: raised
            if time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(proc.args, timeout_s)
    finally:
        os.close(fd)
    proc.wait()


def _spawn(argv: list[str], cwd: Path, log: BinaryIO, err: BinaryIO | None, env: dict[str, str], mark: str,
           sib: Siblings | None) -> tuple[subprocess.Popen[bytes], subprocess.Popen[bytes] | None, set[int]]:
    """The child and its watchdog, and our children before them (not the run's to clean up). With
    siblings, under their lock: a sibling's sweep must not see our child between fork and exec."""
    with _sweeping(sib):
        keep = {pid for pid, _ in _children()}
        watchdog = _watchdog(f"{RUN_TOKEN}={mark}")
        try:
            proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=log, stderr=err if err is not None else subprocess.STDOUT,
                                    env=env, start_new_session=True, preexec_fn=_preexec(watchdog))
        except OSError:
            _stop(watchdog)
            raise
        if sib is not None:
            sib.pids |= {proc.pid, *([watchdog.pid] if watchdog else [])}
            sib.marks.add(mark)
    return proc, watchdog, keep


def _sweep(sib: Siblings | None, keep: set[int], mine: set[int], mark: str) -> None:
    """Kills what the run left (re-parented to us), sparing the siblings' children and leftovers."""
    with _sweeping(sib):
        if sib is not None:
            sib.pids -= mine
            sib.marks.discard(mark)
        _kill_strays(keep | (sib.pids if sib is not None else set()), sib.marks if sib is not None else set())


@dataclass
class Siblings:
    """Runs going on at once in threads of this process (the queue's parallel gates). A sweep for
    strays must spare the others' children: killing and reaping one would make its thread's Popen
    see exit code 0 (ECHILD), i.e. a gate that "passed". So their pids are listed here, and forks
    and sweeps take turns under the lock."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    pids: set[int] = field(default_factory=set)
    marks: set[str] = field(default_factory=set)  # the runs' tokens: a sibling's orphans carry its own


# Set in each runner thread of the queue (ops/queue/runners.py); None: runs never overlap.
SIBLINGS: ContextVar[Siblings | None] = ContextVar("spark_proc_siblings", default=None)


@contextmanager
def _sweeping(sib: Siblings | None) -> Iterator[None]:
    if sib is None:
        yield
        return
    with sib.lock:
        yield


def _not_found(program: str, cwd: Path, env: dict[str, str]) -> str | None:
    """Why exec would fail to find `program`, or None: the check Popen makes, made before bwrap runs it."""
    if "/" in program:
        path = program if os.path.isabs(program) else str(cwd / program)
        return None if os.access(path, os.X_OK) and os.path.isfile(path) else "No such file or directory"
    return None if shutil.which(program, path=env.get("PATH", os.defpath)) else "No such file or directory"


def _die_with_parent() -> None:
    # Linux: the child dies if we are SIGKILLed, so a killed merge leaves no gate behind.
    try:
        _libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except Exception:  # pragma: no cover - not Linux
        pass


die_with_parent = _die_with_parent  # for a process spark-git starts outside run() (`agent run --all`'s runners)


# The watchdog's script. `kill -9 -PGID`: dash's kill takes neither `--` nor `-s KILL` before a negative
# id. Then every process whose environment holds the run's token: what the child daemonized with
# `setsid` left its group, and we (its subreaper) are gone. Twice: a daemon may fork as the first dies.
WATCHDOG = """read pgid; echo armed; exec >/dev/null; read _; [ -n "$pgid" ] && kill -9 -"$pgid" 2>/dev/null
for round in 1 2; do for f in /proc/[0-9]*/environ; do
  if grep -qzxF "$1" "$f" 2>/dev/null; then p=${f#/proc/}; kill -9 "${p%/environ}" 2>/dev/null; fi
done; done"""


def _watchdog(token: str) -> subprocess.Popen[bytes] | None:
    """Kills what the child started if we die, SIGKILL included: PDEATHSIG only reaches the child
    itself. It learns the group from the child (`_preexec`), says "armed", then waits for EOF on a
    pipe that only we hold open; the kernel closes it whenever we go away. A normal end kills the
    watchdog first (`_stop`): the /proc sweep costs nothing then."""
    try:
        return subprocess.Popen(["/bin/sh", "-c", WATCHDOG, "spark-git-watchdog", token],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
    except OSError:  # no /bin/sh: PDEATHSIG still covers the child itself
        return None


def _preexec(watchdog: subprocess.Popen[bytes] | None) -> Callable[[], None]:
    """Runs in the child between fork and exec: it tells the watchdog its group (its own pid, as a
    session leader) and waits until the watchdog is armed, so nothing it starts can escape a kill
    of spark-git that comes right after it began."""
    tell = watchdog.stdin.fileno() if watchdog is not None and watchdog.stdin else None
    armed = watchdog.stdout.fileno() if watchdog is not None and watchdog.stdout else None
    prctl = _prctl_fn()  # looked up before the fork: no dlopen in a child forked from a threaded parent

    def child() -> None:
        if prctl is not None:
            prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if tell is not None and armed is not None:
            os.write(tell, f"{os.getpid()}\n".encode())
            os.read(armed, 16)  # "armed", or EOF if the watchdog died: go on either way

    return child


def _stop(watchdog: subprocess.Popen[bytes] | None) -> None:
    if watchdog is None:
        return
    watchdog.kill()
    watchdog.wait()
    for pipe in (watchdog.stdin, watchdog.stdout):
        if pipe is not None:
            pipe.close()


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def _prctl(option: int, value: int) -> bool:
    try:
        return bool(_libc().prctl(option, value, 0, 0, 0) == 0)
    except Exception:  # not Linux
        return False


def _is_subreaper() -> bool | None:
    try:
        import ctypes

        flag = ctypes.c_int(0)
        if _libc().prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0) != 0:
            return None
        return bool(flag.value)
    except Exception:  # not Linux
        return None


@contextmanager
def subreaper() -> Iterator[None]:
    """Orphans of the child's tree come to us (not to init) while this is open; a process that
    already was a subreaper stays one."""
    turn_on = _is_subreaper() is False and _prctl(PR_SET_CHILD_SUBREAPER, 1)
    try:
        yield
    finally:
        if turn_on:
            _prctl(PR_SET_CHILD_SUBREAPER, 0)


def _children() -> list[tuple[int, int]]:
    """(pid, session id) of each of our child processes, zombies included; [] without /proc."""
    me = os.getpid()
    try:
        names = [n for n in os.listdir("/proc") if n.isdigit()]
    except OSError:
        return []
    out = []
    for name in names:  # every process's stat, read with plain os calls: pathlib's cost was most of a gate run's bookkeeping
        try:
            fd = os.open(f"/proc/{name}/stat", os.O_RDONLY)
            try:
                stat = os.read(fd, 4096)
            finally:
                os.close(fd)
            fields = stat.rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue  # exited meanwhile
        if int(fields[1]) == me:  # fields: state, ppid, pgrp, session, ...
            out.append((int(name), int(fields[3])))
    return out


def _kill_strays(keep: set[int], others: set[str]) -> None:
    """Kills and reaps the child's leftovers that were re-parented to us. They are in another
    session than ours (the child started one), which also spares children of other threads; the
    leftovers of a sibling run still going (the queue's parallel gates) carry its token in `others`."""
    mine = os.getsid(0)
    for _ in range(MAX_STRAY_ROUNDS):
        strays = [pid for pid, sid in _children() if pid not in keep and sid != mine and not (others and _of_run(pid, others))]
        if not strays:
            return
        for pid in strays:
            if not _kill_and_reap(pid):
                keep.add(pid)  # not ours to kill (e.g. setuid): leave it rather than wait forever


def _environ(pid: int) -> list[bytes]:
    try:
        return Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return []


def _of_run(pid: int, marks: set[str]) -> bool:
    """The process carries the token of one of these runs: that run's own sweep takes it."""
    tokens = {f"{RUN_TOKEN}={m}".encode() for m in marks}
    return any(e in tokens for e in _environ(pid))


def kill_marked(entry: str) -> int:
    """SIGKILLs every process whose environment holds `entry` ("NAME=value"), and its process group:
    how the queue stops a gate it no longer needs while another thread waits on it. Returns how many."""
    want, n = entry.encode(), 0
    for pid in (p for p in _proc_pids() if p != os.getpid()):
        if want in _environ(pid):
            n += _kill_group_of(pid)
    return n


def _proc_pids() -> list[int]:
    try:
        return [int(n) for n in os.listdir("/proc") if n.isdigit()]
    except OSError:
        return []


def _kill_group_of(pid: int) -> int:
    try:
        pgid = os.getpgid(pid)
        if pgid != os.getpgrp():
            os.killpg(pgid, signal.SIGKILL)
        os.kill(pid, signal.SIGKILL)
        return 1
    except (ProcessLookupError, PermissionError):
        return 0


def _kill_and_reap(pid: int) -> bool:
    """SIGKILLs `pid` and its process group (a daemon's own, after `setsid`), then reaps it; its
    children come to us as it dies, for the next round."""
    try:
        pgid = os.getpgid(pid)
        if pgid != os.getpgrp():
            os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        os.kill(pid, signal.SIGKILL)
    except PermissionError:
        return False
    except ProcessLookupError:
        pass
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass
    return True


def _prctl_fn() -> Callable[..., int] | None:
    try:
        return _libc().prctl  # type: ignore[no-any-return]
    except Exception:  # not Linux
        return None


def _libc() -> Any:
    import ctypes  # only a process that spawns a child pays for ctypes (start-up)

    return ctypes.CDLL(None, use_errno=True)


def pid_alive(pid: int) -> bool:
    """A process with this id exists (one of another user counts: kill is refused, not unknown)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
