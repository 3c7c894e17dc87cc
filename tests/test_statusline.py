"""`spark-git statusline` (issue 13): the one line Claude Code's statusLine setting shows, from the
event it sends on stdin; on the stdlib fast path (nothing heavy imported)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from fixtures.repo import Run, commit, git, spark, write

from tests.protokit import P

LIGHT = 'protocol = "light"\n[approval]\nallow_non_interactive = true\n'


def _line(p: P, where: Path, *extra: str, project: Path | None = None) -> Run:
    event = {"hook_event_name": "Status", "session_id": "cc-1", "cwd": str(where),
             "workspace": {"current_dir": str(where), "project_dir": str(project or where)}}
    return spark(p.repo.parent, "statusline", *extra, input=json.dumps(event), env=_env())


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != "CLAUDE_PROJECT_DIR"}


def test_agent_task_and_main_lines(tmp_path: Path) -> None:
    p = P(tmp_path, agents="a1,a2", config=LIGHT)
    commit(p.wt("a1"), {"src/app.py": "print('a1')\n"}, "[a1] one")
    commit(p.wt("a1"), {"src/app.py": "print('a1 2')\n"}, "[a1] two")
    assert _line(p, p.wt("a1")).stdout == "spark-git t1/a1 · INIT · clean · 2 ahead of t1\n"
    write(p.wt("a2") / "scratch.txt", "wip\n")
    assert _line(p, p.wt("a2") / "src").stdout == "spark-git t1/a2 · INIT · dirty\n"
    assert _line(p, p.wt()).stdout == "spark-git t1 · INIT · clean\n"
    assert _line(p, p.repo).stdout == "spark-git: 1 live task\n"
    # An agent that wandered into the task worktree is still that agent (its launch place says so).
    assert _line(p, p.wt(), project=p.wt("a1")).stdout.startswith("spark-git t1/a1 · INIT")
    # --json: the same fields as a model
    r = _line(p, p.wt("a1"), "--json")
    d = r.json["data"]
    assert (d["task"], d["agent"], d["state"], d["dirty"], d["ahead"], d["behind"], d["queue"]) == ("t1", "a1", "INIT", False, 2, 0, None), r
    # the task moves on: a1 is behind it too; the task worktree counts against the base branch
    commit(p.wt(), {"task.txt": "t\n"}, "task work")
    assert _line(p, p.wt("a1")).stdout == "spark-git t1/a1 · INIT · clean · 2 ahead, 1 behind t1\n"
    assert _line(p, p.wt()).stdout == "spark-git t1 · INIT · clean · 1 ahead of main\n"


def test_queue_position_and_outside_any_repo(tmp_path: Path) -> None:
    p = P(tmp_path, agents="a1", config=LIGHT)
    assert p.spark("start", "t2", "--agents", "").returncode == 0
    head = git(p.repo, "rev-parse", "t2")
    # Queue entries as the Store names them: refs/spark/queue/<seq>-<task>, landing in seq order.
    git(p.repo, "update-ref", f"refs/spark/queue/{1:020d}-t2", head)
    git(p.repo, "update-ref", f"refs/spark/queue/{2:020d}-t1", git(p.repo, "rev-parse", "t1"))
    assert "· queue #2 ·" in _line(p, p.wt("a1")).stdout
    git(p.repo, "pack-refs", "--all")  # packed refs count too
    assert "· queue #1 ·" in _line(p, p.repo.parent / "repo.tasks" / "t2" / "code").stdout
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    r = _line(p, outside)
    assert r.returncode == 0 and r.stdout == "" and r.stderr == "", r


def test_bad_event_still_answers_from_the_working_directory(tmp_path: Path) -> None:
    p = P(tmp_path, agents="a1", config=LIGHT)
    r = subprocess.run([sys.executable, "-m", "spark_git", "statusline"], input="not json", cwd=p.wt("a1"), capture_output=True, text=True, env=_env())
    assert r.returncode == 0 and r.stdout == "spark-git t1/a1 · INIT · clean\n", r


def test_fast_path_imports_nothing_heavy(tmp_path: Path) -> None:
    p = P(tmp_path, agents="a1", config=LIGHT)
    code = (
        "import sys, io, json; sys.argv=['spark-git','statusline']; sys.stdin=io.StringIO('{}'); "
        "from spark_git.__main__ import main; rc=main(); "
        "heavy=[m for m in ('typer','pydantic','git','rich','filelock','subprocess','dataclasses') if m in sys.modules]; print(rc, heavy)"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=p.wt("a1"), env=_env())
    assert r.stdout.strip().endswith("0 []"), r
