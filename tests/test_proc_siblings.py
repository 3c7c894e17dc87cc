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


def test_a_siblings_daemon_is_left_to_it_and_killed_when_it_ends(tmp_path: Path) -> None:
    """Run B is going; run A leaves a daemon (double fork: re-parented to us, the subreaper). B's sweep
    must spare it (it carries A's token, and B's run began before it existed); A's sweep kills it."""
    import os

    fifos = {n: tmp_path / n for n in ("b-up", "go-b", "daemon", "go-a")}
    for f in fifos.values():
        os.mkfifo(f)
    env = {"PATH": os.environ["PATH"]}
    sib = proc.Siblings()

    def run(cmd: str) -> int:
        with tempfile.TemporaryFile(dir=tmp_path) as log:
            return proc.run(["/bin/sh", "-c", cmd], tmp_path, log, 120, env).exit_code

    with proc.subreaper(), ThreadPoolExecutor(max_workers=2, initializer=proc.SIBLINGS.set, initargs=(sib,)) as pool:
        b = pool.submit(run, f"echo up > {fifos['b-up']}; read x < {fifos['go-b']}")
        assert fifos["b-up"].read_text() == "up\n"
        a = pool.submit(run, f"(setsid sleep 600 & echo $! > {fifos['daemon']}); read x < {fifos['go-a']}")
        daemon = int(fifos["daemon"].read_text())
        fifos["go-b"].write_text("\n")
        assert b.result(timeout=60) == 0  # B ended and swept
        assert proc.pid_alive(daemon) and f"{proc.RUN_TOKEN}=".encode() in Path(f"/proc/{daemon}/environ").read_bytes()
        fifos["go-a"].write_text("\n")
        assert a.result(timeout=60) == 0
    assert not proc.pid_alive(daemon)
