"""Every command once through the real entry point, as a process (`python -m spark_git`, and the
installed `spark-git` script once): its exit code, and JSON on stdout under --json. The rest of the
suite runs the CLI in-process (fixtures.repo.spark); this is what keeps that honest."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from fixtures.repo import commit, git, make_repo, spark

import spark_git

CONFIG = """\
protocol = "light"
[gates]
build = ["sh", "-c", 'test ! -e "$SPARK_TASK_WORKTREE/stop.flag"']  # an ignored flag in the task worktree: the gate runs in a clean checkout
[approval]
allow_non_interactive = true
"""


def _runner(repo: Path):
    def run(expect: int, *args: str, session: str = "s1") -> dict:
        r = spark(repo, "--json", *args, env={**os.environ, "SPARK_SESSION_ID": session}, process=True)
        assert not r.in_process and r.returncode == expect, r
        return r.json

    return run


def _repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", {"README.md": "# demo\n", "src/app.py": "print('hi')\n", ".gitignore": "*.flag\n"}, config=CONFIG)


def test_a_task_from_start_to_cleanup_as_processes(tmp_path: Path) -> None:
    repo, tasks = _repo(tmp_path), tmp_path / "repo.tasks"
    run = _runner(repo)
    run(0, "start", "t1", "--agents", "a1,a2")
    run(3, "start", "t1", session="s2")
    run(2, "start", "Bad/Name")
    run(0, "classify", "t1", "--files", "src/app.py")
    run(0, "advance", "t1")
    run(0, "report", "t1", "--agent", "a1", "--status", "COMPLETE")
    commit(tasks / "t1/agents/a1/code", {"src/app.py": "print('a1')\n"}, "[a1] change")
    run(0, "merge", "t1", "--agent", "a1")
    commit(tasks / "t1/agents/a2/code", {"b.txt": "b\n"}, "[a2] b")
    (tasks / "t1/code/stop.flag").write_text("")
    run(1, "merge", "t1", "--all")  # a2's build gate fails
    (tasks / "t1/code/stop.flag").unlink()
    run(0, "sync", "t1", "--agent", "a2")
    run(0, "who", "t1")
    run(0, "log", "t1")
    run(0, "audit", "t1")
    run(3, "complete", "t1")  # not approved
    run(0, "approve", "t1", "--changes")
    run(0, "complete", "t1")
    run(0, "cleanup", "t1")


def test_locks_archives_doctor_and_hooks_as_processes(tmp_path: Path) -> None:
    repo, tasks = _repo(tmp_path), tmp_path / "repo.tasks"
    run = _runner(repo)
    run(0, "schema")
    run(0, "start", "t2", "--agents", "a1")
    run(0, "status")
    run(0, "env", "t2", "--agent", "a1")
    run(0, "agent", "add", "t2", "a3", "--why", "more hands")
    run(0, "lock", "main")
    run(0, "unlock", "main")
    commit(tasks / "t2/agents/a1/code", {"c.txt": "c\n"}, "[a1] c")
    run(0, "lock", "break", "t2", "--why", "s1 is gone", session="s2")
    run(0, "abandon", "t2", "--why", "not needed", session="s2")
    (ref, *_) = [a["ref"] for a in run(0, "archive", "list", "t2")["data"]["entries"]]
    run(0, "archive", "restore", ref, "--branch", "rescued")
    assert git(repo, "rev-parse", "rescued")
    run(0, "doctor")
    run(0, "hooks", "install")
    run(0, "hooks", "uninstall")


def test_the_installed_script_and_version() -> None:
    script = Path(sys.executable).parent / "spark-git"
    r = subprocess.run([str(script), "--version"], capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert (r.returncode, r.stdout) == (0, f"spark-git {spark_git.__version__}\n"), r  # the one version, src/spark_git/__init__.py
    r = subprocess.run([str(script), "no-such-command"], capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert r.returncode == 2 and "No such command" in r.stderr, r
