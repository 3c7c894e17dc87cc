"""The in-process runner (fixtures.repo.spark) is faithful to a real process and leaves the test
process as it found it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from fixtures.repo import Run, spark

from tests.goldenkit import normalize


def _both(repo: Path, *args: str, **kw) -> None:
    """The same command in-process and as a process: the same exit code and output (idle times aside)."""
    inproc = spark(repo, *args, **kw)
    proc = spark(repo, *args, process=True, **kw)
    assert inproc.in_process and not proc.in_process

    def seen(r: Run) -> tuple[int, str, str]:
        return r.returncode, normalize(r.stdout, repo.parent), normalize(r.stderr, repo.parent)

    assert seen(inproc) == seen(proc), (inproc, proc)


def test_same_output_and_exit_code_as_a_process(repo: Path) -> None:
    env = {**os.environ, "SPARK_SESSION_ID": "s1"}
    assert spark(repo, "start", "t1", "--agents", "a1", env=env).returncode == 0
    _both(repo, "status", "t1", env=env)
    _both(repo, "--json", "status", env=env)
    _both(repo, "who", "t1", "--json", env=env)
    _both(repo, "start", "t1", env={**env, "SPARK_SESSION_ID": "s2"})  # blocked: stderr, exit 3
    _both(repo, "start", "Bad/Name", "--json", env=env)  # bad input, exit 2
    _both(repo, "no-such-command", env=env)  # typer's usage error
    _both(repo, "approve", "t1", "--changes", env=env, input="t1\n")  # stdin is not a terminal: refused
    _both(repo, "--version")


def test_the_test_process_is_left_as_it_was(repo: Path) -> None:
    before = (dict(os.environ), os.getcwd(), list(sys.argv), sys.stdin, sys.stdout, sys.stderr)
    r = spark(repo, "--json", "status", env={"PATH": os.environ["PATH"], "HOME": os.environ["HOME"], "GIT_DIR": "/nowhere"})
    assert r.returncode == 0, r  # __main__ drops GIT_DIR from os.environ: restored below
    r = spark(repo, "status", "--no-such-option")
    assert r.returncode == 2, r
    assert (dict(os.environ), os.getcwd(), list(sys.argv), sys.stdin, sys.stdout, sys.stderr) == before


def test_what_the_command_sees(repo: Path, tmp_path: Path) -> None:
    """The repository is found from the cwd given, as in a process started there."""
    sub = repo / "src"
    r = spark(sub, "--json", "status", env={**os.environ, "SPARK_SESSION_ID": "s9"})
    assert r.returncode == 0 and r.json["summary"].endswith(f"under {tmp_path / 'repo.tasks'}"), r
    r = spark(tmp_path, "--json", "status")
    assert r.returncode == 2 and "not inside a git repository" in r.json["summary"], r
