"""The day of issue 24 as one test, on a small vendored project whose gate is its own pytest suite
(fixtures/dayproject.py): three tasks from three sessions, a test-writer whose test needs the code
first, a batch of two through the queue killed by SIGKILL mid-drain and finished by the next drain,
a task conflicting with what landed, taken back through `update`, every task cleaned up, `doctor`
silent, and main's first-parent history green at every commit."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from fixtures import dayproject
from fixtures.repo import Run, commit, git, make_repo, spark


class Day:
    def __init__(self, tmp: Path) -> None:
        self.repo = make_repo(tmp / "repo", dayproject.FILES, config=dayproject.config())
        self.root = tmp / "repo.tasks"

    def sp(self, task: str, *args: str, env: dict[str, str] | None = None) -> Run:
        return spark(self.repo, *args, env={**os.environ, "SPARK_SESSION_ID": f"s-{task}", **(env or {})})

    def ok(self, task: str, *args: str) -> Run:
        r = self.sp(task, *args)
        assert r.returncode == 0, r
        return r

    def wt(self, task: str, agent: str | None = None) -> Path:
        return self.root / task / "code" if agent is None else self.root / task / "agents" / agent / "code"

    def state(self, task: str) -> str:
        return str(json.loads((self.root / task / "task.json").read_text())["state"])


def _green(repo: Path, sha: str, scratch: Path) -> bool:
    git(repo, "worktree", "add", "-q", "--detach", str(scratch), sha)
    try:
        return subprocess.run([*dayproject.PYTEST], cwd=scratch, capture_output=True).returncode == 0
    finally:
        git(repo, "worktree", "remove", "--force", str(scratch))


@pytest.mark.slow
def test_a_day_three_tasks_a_crash_a_batch_a_conflict_cleanup_and_doctor_silent(tmp_path: Path) -> None:
    d = Day(tmp_path)
    base = git(d.repo, "rev-parse", "main")
    d.ok("t1", "start", "t1", "--agents", "tester,coder")  # joined tester first: its test needs the code
    d.ok("t2", "start", "t2", "--agents", "b1")
    d.ok("t3", "start", "t3", "--agents", "c1")

    # t1: a test-writer and a coder; merge --all lands the tester on the second pass, after the coder
    commit(d.wt("t1", "tester"), {"tests/test_sub.py": "from calc import sub\n\n\ndef test_sub() -> None:\n    assert sub(5, 3) == 2\n"}, "test sub")
    commit(d.wt("t1", "coder"), {"calc/__init__.py": dayproject.CALC.replace('"""calc: small arithmetic."""', '"""calc: small arithmetic, with sub."""')
                                 + "\n\ndef sub(a: int, b: int) -> int:\n    return a - b\n"}, "sub")
    r = d.sp("t1", "--json", "merge", "t1", "--all")
    assert r.returncode == 0 and [m["agent"] for m in r.json["data"]["merged"]] == ["coder", "tester"], r
    # t2: its own module and test
    commit(d.wt("t2", "b1"), {"calc/mul.py": "def mul(a: int, b: int) -> int:\n    return a * b\n",
                             "tests/test_mul.py": "from calc.mul import mul\n\n\ndef test_mul() -> None:\n    assert mul(2, 3) == 6\n"}, "mul")
    d.ok("t2", "merge", "t2", "--agent", "b1")
    # t3: edits the line t1's coder edited too
    commit(d.wt("t3", "c1"), {"calc/__init__.py": dayproject.CALC.replace('"""calc: small arithmetic."""', '"""calc: arithmetic for the day."""')}, "docstring")
    d.ok("t3", "merge", "t3", "--agent", "c1")
    for t in ("t1", "t2", "t3"):
        d.ok(t, "approve", t, "--changes")

    # a batch of two, its drain SIGKILLed while the gate starts; the next drain lands both in one batch
    for t in ("t1", "t2"):
        d.ok(t, "complete", t, "--no-wait")
    r = d.sp("t1", "queue", "run", env={"SPARK_FAULT_KILL_AT": "queue-gate-start"})
    assert r.returncode == -9, r
    assert git(d.repo, "rev-parse", "main") == base  # nothing landed
    r = d.sp("t1", "--json", "queue", "run")
    assert r.returncode == 0 and r.json["data"]["repaired"], r
    assert [(o["task"], o["result"], len(o["batch"])) for o in r.json["data"]["outcomes"]] == [("t1", "landed", 2), ("t2", "landed", 2)]

    # t3 conflicts with what landed: given back with the next command, then the documented round trip
    r = d.sp("t3", "--json", "complete", "t3")
    assert r.returncode == 3 and r.json["next"] == ["spark-git update t3"] and "calc/__init__.py" in r.json["summary"], r
    assert d.sp("t3", "update", "t3").returncode == 3
    assert d.sp("t3", "update", "t3", "--leave-conflict").returncode == 3
    merged = (d.repo / "calc/__init__.py").read_text().replace("calc: small arithmetic, with sub.", "calc: arithmetic for the day, with sub.")
    (d.wt("t3") / "calc/__init__.py").write_text(merged)
    git(d.wt("t3"), "add", "calc/__init__.py")
    git(d.wt("t3"), "-c", "core.editor=true", "rebase", "--continue")
    r = d.sp("t3", "--json", "update", "t3")
    assert r.returncode == 0 and r.json["data"]["approval"] == "voided" and r.json["next"] == ["spark-git approve t3 --changes"], r
    d.ok("t3", "approve", "t3", "--changes")
    d.ok("t3", "complete", "t3")
    assert all(d.state(t) == "COMPLETE" for t in ("t1", "t2", "t3"))

    for t in ("t1", "t2", "t3"):
        r = d.sp(t, "--json", "cleanup", t)
        assert r.returncode == 0 and r.json["data"]["kept_branches"] == [], r
    r = d.sp("t1", "--json", "doctor")
    assert r.returncode == 0 and r.json["data"]["findings"] == [], r.json["data"]

    # main: one merge commit per task on its first-parent line, each one green; the suite passes
    line = git(d.repo, "rev-list", "--first-parent", f"{base}..main").split()
    assert len(line) == 3 and all(len(git(d.repo, "rev-list", "--parents", "-n1", c).split()) == 3 for c in line)
    assert all(_green(d.repo, c, tmp_path / f"green-{i}") for i, c in enumerate(line))
    assert git(d.repo, "branch", "--format=%(refname:short)") == "main"
