"""A command waiting for a task mutex says who holds it and since when; `--no-wait` (or
SPARK_NO_WAIT=1) exits 3 at once instead, changing nothing. The holder is a real `merge` whose gate
waits on a FIFO, so the test knows when the mutex is held without sleeping."""

from __future__ import annotations

import os
import re
import select
import subprocess
from pathlib import Path

import pytest
from fixtures.repo import spark_argv

from tests.mergekit import Task, config
from tests.prockit import read_fifo

BOUND_S = 60.0
pytestmark = pytest.mark.usefixtures("unboxed")  # the gate holds the mutex by talking through FIFOs


def _holding(tmp_path: Path) -> tuple[Task, subprocess.Popen[str], Path]:
    ready, go = tmp_path / "ready", tmp_path / "go"
    os.mkfifo(ready)
    os.mkfifo(go)
    t = Task(tmp_path, ["a1", "a2"], config(build=f"echo up > {ready}; read x < {go}"))
    t.commit("a1", {"x.txt": "x\n"}, "[a1] x")
    env = dict(os.environ, SPARK_SESSION_ID="s1")
    holder = subprocess.Popen(spark_argv("--json", "merge", t.task, "--agent", "a1"), cwd=t.repo, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    assert read_fifo(ready) == "up"  # the holder is inside its gate, under the task mutex
    return t, holder, go


def _release(holder: subprocess.Popen[str], go: Path) -> None:
    with open(go, "w") as f:
        f.write("go\n")
    out, err = holder.communicate(timeout=BOUND_S)
    assert holder.returncode == 0, (out, err)


def test_no_wait_exits_3_at_once_naming_the_holder(tmp_path: Path) -> None:
    t, holder, go = _holding(tmp_path)
    try:
        before = t.snapshot(["a1", "a2"])
        r = t.spark("--no-wait", "--json", "merge", t.task, "--agent", "a2")
        assert r.returncode == 3 and r.json["status"] == "BLOCKED", r
        assert re.match(rf"the task mutex of t1 is held by pid {holder.pid} \(spark-git --json merge t1 --agent a1\) since \d\d:\d\d:\d\d, ", r.json["summary"]), r.json["summary"]
        assert r.json["data"]["holder"]["pid"] == holder.pid
        e = t.spark("--json", "merge", t.task, "--agent", "a2", env={"SPARK_NO_WAIT": "1"})
        assert e.returncode == 3 and "--no-wait" in e.json["summary"], e
        assert t.snapshot(["a1", "a2"]) == before
    finally:
        _release(holder, go)


def test_a_waiting_command_says_who_holds_the_mutex(tmp_path: Path) -> None:
    t, holder, go = _holding(tmp_path)
    env = dict(os.environ, SPARK_SESSION_ID="s1")
    waiter = subprocess.Popen(spark_argv("merge", t.task, "--agent", "a2"), cwd=t.repo, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        assert waiter.stderr is not None
        ready, _, _ = select.select([waiter.stderr], [], [], BOUND_S)  # said after a moment (stderr is not a terminal)
        assert ready, "the waiting command said nothing"
        line = waiter.stderr.readline()
        assert re.match(rf"spark-git: waiting for the task mutex of t1, held by pid {holder.pid} \(spark-git --json merge t1 --agent a1\) since \d\d:\d\d:\d\d", line), line
    finally:
        _release(holder, go)
        out, _ = waiter.communicate(timeout=BOUND_S)
    assert waiter.returncode == 0 and "a2 has nothing new" in out, out
