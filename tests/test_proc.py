"""core/proc: the one child-process runner. Real processes; the tests wait on FIFOs and pidfds,
never on sleeps: a child reports its pids through a FIFO, and a timeout starts counting only after
`started` (which reads that FIFO) returns."""

from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path

import pytest

from spark_git.core import proc
from tests.prockit import daemon_gate, read_fifo, running, with_marker


def _run(tmp_path: Path, argv: list[str], timeout_s: float = 600, **kw) -> tuple[proc.Result, str]:
    log = tmp_path / "out.log"
    with open(log, "wb") as out:
        res = proc.run(argv, tmp_path, out, timeout_s, **kw)
    return res, log.read_text()


def test_a_daemon_that_left_the_group_is_killed_when_the_run_ends(tmp_path: Path) -> None:
    fifo, marker = tmp_path / "pids.fifo", f"spark-daemon-{uuid.uuid4().hex}"
    os.mkfifo(fifo)
    res, _ = _run(tmp_path, ["/bin/sh", "-c", daemon_gate(fifo, marker)])
    assert res.exit_code == 0 and not res.timed_out, res
    daemon, child = (int(p) for p in Path(f"{fifo}.pids").read_text().split())
    assert os.getsid(0) != daemon  # it really had its own session
    # Reaped before run returned: no waiting here.
    assert with_marker(marker) == [] and not running(daemon) and not running(child)


def test_leftovers_in_the_group_are_killed_at_a_normal_exit(tmp_path: Path) -> None:
    pidfile = tmp_path / "bg.pid"
    res, _ = _run(tmp_path, ["/bin/sh", "-c", f"sleep 300 & echo $! > {pidfile}"])
    assert res.exit_code == 0, res
    assert not running(int(pidfile.read_text()))


def test_timeout_kills_the_whole_group(tmp_path: Path) -> None:
    fifo = tmp_path / "pid.fifo"
    os.mkfifo(fifo)
    pids: list[int] = []
    # The timeout counts from when `started` returns, i.e. once the grandchild exists.
    res, log = _run(tmp_path, ["/bin/sh", "-c", f"echo hello; sleep 300 & echo $! > {fifo}; wait"], timeout_s=0.2,
                    started=lambda: pids.append(int(read_fifo(fifo))))
    assert res.timed_out and res.exit_code == -9 and res.error is None, res
    assert "hello" in log
    assert not running(pids[0])


def test_ctrl_c_kills_the_group_and_propagates(tmp_path: Path) -> None:
    fifo = tmp_path / "pid.fifo"
    os.mkfifo(fifo)
    pids: list[int] = []

    def interrupted() -> None:
        pids.append(int(read_fifo(fifo)))
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _run(tmp_path, ["/bin/sh", "-c", f"sleep 300 & echo $! > {fifo}; wait"], started=interrupted)
    assert not running(pids[0])


def test_missing_command_is_exit_127(tmp_path: Path) -> None:
    res, _ = _run(tmp_path, ["no-such-command-xyz", "--flag"])
    assert res.exit_code == 127 and not res.timed_out, res
    assert res.error == "cannot run 'no-such-command-xyz': No such file or directory"
    assert res.os_error is not None and "No such file or directory" in res.os_error
    res, log = _run(tmp_path, proc.argv_of("no-such-command-xyz"))
    assert res.exit_code == 127 and res.error is None and "not found" in log, res


def test_default_environment_has_no_git_location(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "elsewhere"))
    monkeypatch.setenv("SPARK_PROC_TEST", "kept")
    res, log = _run(tmp_path, proc.argv_of('echo "dir=${GIT_DIR-unset} kept=$SPARK_PROC_TEST"'))
    assert res.exit_code == 0 and "dir=unset kept=kept" in log, (res, log)


def test_our_other_children_are_left_alone(tmp_path: Path) -> None:
    import subprocess

    mine = subprocess.Popen(["sleep", "300"], start_new_session=True)  # another session, started before the run
    try:
        res, _ = _run(tmp_path, ["/bin/sh", "-c", "exit 3"])
        assert res.exit_code == 3 and running(mine.pid)
    finally:
        mine.kill()
        mine.wait()


DROPPED_CTRL_C = r"""
import os, signal, sys
from pathlib import Path
from spark_git.core import proc
from spark_git.core.errors import CtrlC, Interrupted
signal.signal(signal.SIGINT, CtrlC())
os.register_at_fork(after_in_parent=lambda: os.kill(os.getpid(), signal.SIGINT))  # Ctrl-C inside fork's callbacks
try:
    with open(os.devnull, "wb") as log:
        proc.run(["/bin/sh", "-c", "sleep 300; :", sys.argv[1]], Path.cwd(), log, 600)
except Interrupted:
    print("interrupted")
"""


def test_a_ctrl_c_python_drops_during_the_fork_still_stops_the_run(tmp_path: Path) -> None:
    """Python swallows an exception raised in an at-fork callback ("Exception ignored in ..."), and a
    preexec function makes the runner's fork run them: such a Ctrl-C used to leave `spark-git merge`
    waiting on its gate until the gate's timeout (test_contract's SIGINT test hung 3 times in 32)."""
    import subprocess
    import sys

    marker = f"spark-dropped-{uuid.uuid4().hex}"
    r = subprocess.run([sys.executable, "-c", DROPPED_CTRL_C, marker], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout == "interrupted\n", r
    assert "Exception ignored" in r.stderr  # the window really was the one Python drops
    assert with_marker(marker) == []  # and the child is gone with the run


def test_the_childs_end_is_seen_at_once_not_polled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The wait wakes when the child exits (a pidfd), not in Popen.wait's polling sleeps of up to 50 ms
    that every gate paid at its end (and that were counted as the gate's own time)."""
    def polled(seconds: float) -> None:
        raise AssertionError(f"polled with time.sleep({seconds})")

    monkeypatch.setattr(subprocess.time, "sleep", polled)  # type: ignore[attr-defined]  # what Popen.wait(timeout) sleeps with
    res, log = _run(tmp_path, ["/bin/sh", "-c", "echo done"], timeout_s=600)
    assert res.exit_code == 0 and not res.timed_out and log == "done\n", (res, log)
