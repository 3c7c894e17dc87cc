"""A failed gate says what failed: the tail of its log, pytest's failing tests, the command to try
again (and to run it by hand); exit 127 says the command was not found in that worktree."""

from __future__ import annotations

from pathlib import Path

from tests.mergekit import PY, Task, config

PYTEST = [PY, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider", "tests"]
FAILING = "def test_good():\n    pass\n\n\ndef test_bad():\n    assert 1 == 2, 'one is not two'\n"


def checkout(t: Task) -> Path:
    return t.root.parent / ".gates" / "t1" / "build"


def _pytest_task(tmp_path: Path) -> Task:
    t = Task(tmp_path, ["a1"], config(build=PYTEST))
    t.commit("a1", {"tests/test_thing.py": FAILING}, "[a1] a failing test")
    return t


def test_json_carries_failing_tests_log_tail_and_retry(tmp_path: Path) -> None:
    t = _pytest_task(tmp_path)
    r = t.merge("a1", env={"PYTHONDONTWRITEBYTECODE": "1"})
    assert r.returncode == 1, r
    d = r.json["data"]
    assert d["failed_tests"] == ["tests/test_thing.py::test_bad"]
    assert 0 < len(d["log_tail"]) <= 20 and any("1 failed, 1 passed" in ln for ln in d["log_tail"]), d["log_tail"]
    assert d["retry"] == "spark-git merge t1 --agent a1" and r.json["next"] == ["spark-git merge t1 --agent a1"]
    assert d["run_by_hand"].startswith(f"cd {checkout(t)} && ")  # the gate's clean checkout of the agent head


def test_human_output_shows_the_tail_the_failing_tests_and_the_retry(tmp_path: Path) -> None:
    t = _pytest_task(tmp_path)
    r = t.spark("merge", t.task, "--agent", "a1", env={"PYTHONDONTWRITEBYTECODE": "1"})
    assert r.returncode == 1, r
    err = r.stderr
    assert "failing tests (1):\n    tests/test_thing.py::test_bad\n" in err, err
    assert "line(s) of " in err and "│ " in err and "one is not two" in err, err
    assert "spark-git merge t1 --agent a1" in err.split("next:")[-1], err
    assert f"run it by hand: cd {checkout(t)} && " in err


def test_exit_127_says_not_found_in_that_worktree(tmp_path: Path) -> None:
    t = Task(tmp_path, ["a1"], config(build="no-such-gate-command-xyz --check"))
    t.commit("a1", {"x.txt": "x\n"}, "[a1] x")
    r = t.spark("merge", t.task, "--agent", "a1")
    assert r.returncode == 1, r
    assert f"command not found in {checkout(t)} (exit 127)" in r.stderr, r.stderr
    assert "the gate's command was not found in" in r.stderr and "fix gates.build in the config" in r.stderr
    t2 = Task(tmp_path / "argv", ["a1"], config(build=["no-such-gate-command-xyz"]))
    t2.commit("a1", {"x.txt": "x\n"}, "[a1] x")
    j = t2.merge("a1")
    assert j.returncode == 1 and j.json["data"]["exit_code"] == 127, j
    assert f"command not found in {checkout(t2)} (exit 127): cannot run 'no-such-gate-command-xyz'" in j.json["summary"]
