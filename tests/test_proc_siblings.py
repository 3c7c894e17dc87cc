"""core/proc.run from several threads at once (the queue's parallel gates): each run's sweep for
strays spares its siblings' children, so every run reports its own child's exit code. Reaping a
sibling's child made that thread's Popen read exit code 0 (ECHILD): a failing gate that "passed"."""

from __future__ import annotations

import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from spark_git.core import proc


def test_concurrent_runs_each_report_their_own_exit_code(tmp_path: Path) -> None:
    sib = proc.Siblings()

    def one(i: int) -> int:
        with tempfile.TemporaryFile(dir=tmp_path) as log:
            return proc.run(["/bin/sh", "-c", f"exit {3 + i % 2}"], tmp_path, log, 30).exit_code

    with ThreadPoolExecutor(max_workers=4, initializer=proc.SIBLINGS.set, initargs=(sib,)) as pool:
        codes = list(pool.map(one, range(80)))
    assert codes == [3 + i % 2 for i in range(80)]
    assert sib.pids == set()  # each run took its own children off the list


def test_a_marked_run_is_killed_by_its_mark(tmp_path: Path) -> None:
    with ThreadPoolExecutor(max_workers=1) as pool, tempfile.TemporaryFile(dir=tmp_path) as log:
        fifo = tmp_path / "started"
        import os

        os.mkfifo(fifo)
        f = pool.submit(proc.run, ["/bin/sh", "-c", f"echo up > {fifo}; exec sleep 600"], tmp_path, log, 600, {"PATH": os.environ["PATH"], "MARK": "m1"})
        assert fifo.read_text() == "up\n"  # the child is running (and past its exec)
        assert proc.kill_marked("MARK=m1") >= 1
        assert f.result(timeout=60).exit_code == -9
