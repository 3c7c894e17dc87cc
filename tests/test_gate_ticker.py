"""A running gate shows its elapsed time and last output line on a terminal; nothing extra under
--json or when stderr is not a terminal."""

from __future__ import annotations

import os
import pty
import subprocess
import threading
import time
from pathlib import Path

import pytest
from fixtures.repo import spark_argv

from spark_git.cli.common import AppState, ticker
from spark_git.core import proc
from tests.mergekit import Task, config
from tests.ptyutil import BOUND_S, _read


@pytest.mark.usefixtures("unboxed")
def test_a_running_gate_ticks_on_a_terminal(tmp_path: Path) -> None:
    go = tmp_path / "go"
    os.mkfifo(go)
    t = Task(tmp_path, ["a1"], config(build=f"echo compiling step 1; read x < {go}; echo done"))
    t.commit("a1", {"x.txt": "x\n"}, "[a1] x")
    master, slave = pty.openpty()
    p = subprocess.Popen(spark_argv("merge", t.task, "--agent", "a1"), cwd=t.repo, stdin=slave, stdout=slave, stderr=slave,
                         env=dict(os.environ, SPARK_SESSION_ID="s1"), close_fds=True)
    os.close(slave)
    deadline, seen = time.monotonic() + BOUND_S, b""
    try:
        while b"running for" not in seen or b"compiling step 1" not in seen.split(b"running for", 1)[1]:
            chunk = _read(master, deadline)
            assert chunk, seen
            seen += chunk
        with open(go, "w") as f:  # the ticker was seen: let the gate finish
            f.write("go\n")
        while chunk := _read(master, deadline):
            seen += chunk
    finally:
        os.close(master)
        if p.poll() is None:
            p.kill()
        p.wait(timeout=BOUND_S)
    text = seen.decode(errors="replace")
    assert p.returncode == 0, text
    assert "… gate running for 1 s: compiling step 1" in text, text
    assert "merged 1 commit(s) of a1 into t1" in text


class _Ctx:
    def __init__(self, st: AppState) -> None:
        self.st = st

    def ensure_object(self, _: type) -> AppState:
        return self.st


def test_no_ticker_under_json_or_off_a_terminal() -> None:
    assert ticker(_Ctx(AppState(json=True))) is None  # type: ignore[arg-type]
    assert ticker(_Ctx(AppState())) is None  # type: ignore[arg-type]  # pytest's stderr is not a terminal


def test_ticking_reports_the_log_tail_then_done(tmp_path: Path) -> None:
    log = tmp_path / "log"
    log.write_text("first\nsecond line\n\n")
    seen: list[tuple[float, str]] = []
    ticked, finished = threading.Event(), threading.Event()

    class T:
        def tick(self, elapsed_s: float, last_line: str) -> None:
            seen.append((elapsed_s, last_line))
            ticked.set()

        def done(self) -> None:
            finished.set()

    with proc.ticking(log, T(), every_s=0.01):
        assert ticked.wait(BOUND_S)
    assert finished.is_set() and seen[0][1] == "second line" and seen[0][0] > 0
    with proc.ticking(log, None):  # no ticker: no thread, nothing happens
        pass
