"""Progress where work takes time (worktree creation and checkout, setup commands, cleanup/abandon per
worktree, archiving, doctor's scans): rich progress on stderr when it is a terminal, nothing extra
with --json or when not a terminal."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from fixtures.repo import make_repo, spark, write

from tests.ptyutil import run_on_pty

CONFIG = 'protocol = "light"\n[worktree]\nsetup = ["git status --short"]\n'
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@pytest.fixture
def prepo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", {"README.md": "# demo\n"}, config=CONFIG)


def shown(out: str) -> str:
    return ANSI.sub("", out).replace("\r", "\n")


def test_progress_on_a_terminal(prepo: Path) -> None:
    # 80 columns: a step longer than that (a worktree path) is cut, never the elapsed time beside it
    rc, out = run_on_pty(prepo, ["start", "t1", "--agents", "a1,a2"], cols=80)
    text = shown(out)
    assert rc == 0, text
    for step in ("[1/3] worktree", "[3/3] worktree", "checking out 3 worktree(s)", "checked out", "setup 1/1 in"):
        assert step in text, (step, text)
    assert re.search(r"\d:\d\d:\d\d", text), text  # the elapsed-time column of the live line
    rc, out = run_on_pty(prepo, ["agent", "add", "t1", "a3", "--why", "more hands"])
    text = shown(out)
    assert rc == 0 and "on branch task-t1-agent-a3" in text and "setup 1/1 in" in text, text
    write(prepo.parent / "repo.tasks/t1/agents/a1/code/draft.txt", "draft\n")
    rc, out = run_on_pty(prepo, ["abandon", "t1", "--why", "stop"])
    text = shown(out)
    assert rc == 0, text
    for step in ("scanning", "archiving uncommitted work in", "[1/4] removing", "[4/4] removing"):
        assert step in text, (step, text)
    rc, out = run_on_pty(prepo, ["doctor"])
    assert rc == 0 and "reading worktrees and branches" in shown(out), out


def test_nothing_extra_with_json_on_a_terminal(prepo: Path) -> None:
    rc, out = run_on_pty(prepo, ["--json", "start", "t1", "--agents", "a1"])
    assert rc == 0, out
    assert json.loads(out.strip())["status"] == "OK"  # the one JSON object, and nothing else on the terminal
    rc, out = run_on_pty(prepo, ["--json", "abandon", "t1", "--why", "x"])
    assert rc == 0 and json.loads(out.strip())["data"]["final_state"] == "ABANDONED", out


def test_nothing_extra_when_not_a_terminal(prepo: Path) -> None:
    env = {**os.environ, "SPARK_SESSION_ID": "s1"}
    for args in (("start", "t1", "--agents", "a1"), ("doctor",), ("abandon", "t1", "--why", "x")):
        r = spark(prepo, *args, env=env)
        assert r.returncode == 0 and r.stderr == "", r
