"""Bad input is exit 2 with the rule it broke, and nothing is created; corrupt state is exit 3 with its path."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from fixtures.repo import commit, git, make_repo, snapshot, spark, write


def no_traceback(r) -> None:
    assert "Traceback" not in r.stderr and "Traceback" not in r.stdout, r


BAD_NAMES = [
    "a..b",
    "a/b",
    "Upper",
    "has space",
    "tab\there",
    "nl\nhere",
    "bell\x07",
    "x" * 100,
    "x.lock",
    "main",
    ".hidden",
    "_under",
    "",
]


@pytest.mark.parametrize("name", BAD_NAMES, ids=repr)
def test_bad_task_name_is_exit_2_and_creates_nothing(repo: Path, cli, name: str) -> None:
    before = snapshot(repo)
    r = cli("start", "--json", "--agents", "a1", "--", name)
    assert r.returncode == 2, r
    assert r.json["status"] == "FAIL" and "bad task name" in r.json["summary"], r
    assert snapshot(repo) == before


def test_leading_dash_is_exit_2_with_or_without_double_dash(repo: Path, cli) -> None:
    before = snapshot(repo)
    r = cli("start", "-bad")  # typer reads it as an unknown option
    assert r.returncode == 2, r
    r = cli("start", "--json", "--", "-bad")
    assert r.returncode == 2, r
    assert "bad task name '-bad'" in r.json["summary"]
    assert snapshot(repo) == before


def test_messages_name_the_rule(repo: Path, cli) -> None:
    cases = {
        "a..b": "contains '..'",
        "x.lock": "ends in '.lock'",
        "x" * 100: "100 characters long",
        "nl\nhere": "control character",
        "Upper": "may only use lowercase",
        "main": "reserved",
    }
    for name, why in cases.items():
        r = cli("start", "--json", "--", name)
        assert r.returncode == 2 and why in r.json["summary"], (name, r)
        no_traceback(r)


@pytest.mark.parametrize("agent", ["Bad", "a/b", "a..b", "x.lock", "-x", "a b", "y" * 64])
def test_bad_agent_name_at_start_creates_nothing(repo: Path, cli, agent: str) -> None:
    before = snapshot(repo)
    r = cli("start", "t1", "--json", "--agents", f"good,{agent}")
    assert r.returncode == 2, r
    assert "bad agent name" in r.json["summary"], r
    assert snapshot(repo) == before


def test_existing_branch_is_refused(repo: Path, cli) -> None:
    git(repo, "branch", "foo")
    before = snapshot(repo)
    r = cli("start", "foo", "--json", "--agents", "a1")
    assert r.returncode == 2, r
    assert "branch foo already exists" in r.json["summary"]
    assert snapshot(repo) == before


def test_existing_agent_branch_is_refused(repo: Path, cli) -> None:
    git(repo, "branch", "task-t1-agent-a2")
    before = snapshot(repo)
    r = cli("start", "t1", "--json", "--agents", "a1,a2")
    assert r.returncode == 2, r
    assert "task-t1-agent-a2 already exists" in r.json["summary"]
    assert snapshot(repo) == before


def test_task_named_after_configured_base_branch_is_refused(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", config='base_branch = "trunk"\n', branch="trunk")
    before = snapshot(repo)
    r = spark(repo, "start", "trunk", "--json", env={**os.environ, "SPARK_SESSION_ID": "s1"})
    assert r.returncode == 2, r
    assert snapshot(repo) == before


def test_bad_base_is_exit_2(repo: Path, cli) -> None:
    before = snapshot(repo)
    r = cli("start", "t1", "--base", "no-such-ref", "--json")
    assert r.returncode == 2 and "no-such-ref" in r.json["summary"], r
    assert snapshot(repo) == before


@pytest.mark.parametrize("root", [".git/tasks", ".git", "./.git/../.git/x"])
def test_tasks_root_inside_git_dir(tmp_path: Path, root: str) -> None:
    repo = make_repo(tmp_path / "r", config=f'tasks_root = "{root}"\n')
    before = snapshot(repo)
    r = spark(repo, "start", "t1", "--json", env={**os.environ, "SPARK_SESSION_ID": "s1"})
    assert r.returncode == 2, r
    assert "inside the git directory" in r.json["summary"]
    assert snapshot(repo) == before
    assert not (repo / ".git" / "tasks").exists()


def test_outside_any_repo(tmp_path: Path) -> None:
    d = tmp_path / "plain"
    d.mkdir()
    for args in (["start", "t1"], ["status"], ["lock", "main"], ["abandon", "t1", "--why", "x"]):
        r = spark(d, *args, "--json", env={**os.environ, "SPARK_SESSION_ID": "s1", "GIT_CEILING_DIRECTORIES": str(tmp_path)})
        assert r.returncode == 2, r
        assert "not inside a git repository" in r.json["summary"]
    assert sorted(p.name for p in d.iterdir()) == []
    assert not (tmp_path / "plain.tasks").exists()


def test_unknown_key_in_spark_git_toml(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", config='tasks_rot = "x"\n[gates]\nbuidl = "make"\n')
    before = snapshot(repo)
    r = spark(repo, "start", "t1", env={**os.environ, "SPARK_SESSION_ID": "s1"})
    assert r.returncode == 2, r
    assert "tasks_rot: unknown key" in r.stderr and "gates.buidl: unknown key" in r.stderr
    no_traceback(r)
    assert snapshot(repo) == before


def test_unknown_key_in_pyproject(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"pyproject.toml": '[project]\nname = "x"\n\n[tool.spark-git]\ndefault_agent = ["a"]\n'})
    before = snapshot(repo)
    r = spark(repo, "status", "--json")
    assert r.returncode == 2, r
    assert "tool.spark-git.default_agent: unknown key" in r.json["summary"]
    assert snapshot(repo) == before


def test_bad_value(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", config='[gates]\ntimeout_s = "x"\n')
    before = snapshot(repo)
    r = spark(repo, "start", "t1", "--json", env={**os.environ, "SPARK_SESSION_ID": "s1"})
    assert r.returncode == 2, r
    assert "gates.timeout_s" in r.json["summary"]
    assert snapshot(repo) == before


def test_unparsable_config(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", config="tasks_root = \n")
    r = spark(repo, "status", "--json")
    assert r.returncode == 2 and ".spark-git.toml" in r.json["summary"], r


# -- corrupt task.json ------------------------------------------------------------------------

CORRUPT = {
    "garbage": b"\x00\xff{not json",
    "truncated": b'{"task_name": "t1", "session_id": "s1"',
    "not an object": b"[1, 2]",
    "missing fields": json.dumps({"task_name": "t1", "state": "INIT"}).encode(),
    "wrong type": json.dumps({"task_name": "t1", "session_id": 7, "base_branch": "main"}).encode(),
}


def test_corrupt_task_json_is_reported_with_path(repo: Path, cli) -> None:
    assert cli("start", "t1", "--agents", "a1").returncode == 0
    lock = repo.parent / "repo.tasks" / "t1" / "task.json"
    commands = (
        ["start", "t1", "--agents", "a1"],
        ["agent", "add", "t1", "a2", "--why", "more hands"],
        ["abandon", "t1", "--why", "done"],
    )
    for kind, payload in CORRUPT.items():
        lock.write_bytes(payload)
        before = snapshot(repo)
        for args in commands:
            r = cli(*args, "--json")
            assert r.returncode == 3, (kind, r)
            assert r.json["status"] == "BLOCKED" and r.json["data"]["path"] == str(lock), (kind, r)
            assert "is corrupt" in r.json["summary"]
        r = cli("status", "--json")
        assert r.returncode == 0, (kind, r)
        (row,) = r.json["data"]["tasks"]
        assert row["task"] == "t1" and str(lock) in row["problem"] and "corrupt" in row["problem"], (kind, row)
        assert snapshot(repo) == before, kind
    # Human output names the path and shows no traceback.
    for args in commands:
        r = cli(*args)
        assert r.returncode == 3 and str(lock) in r.stderr.replace("\n", ""), r
        no_traceback(r)
    r = cli("status")
    assert r.returncode == 0 and "corrupt" in r.stdout, r
    no_traceback(r)


def test_corrupt_lock_does_not_hide_other_tasks(repo: Path, cli) -> None:
    assert cli("start", "t1").returncode == 0
    assert cli("start", "t2").returncode == 0
    (repo.parent / "repo.tasks" / "t1" / "task.json").write_bytes(b"garbage")
    r = cli("status", "--json")
    assert r.returncode == 0, r
    rows = {t["task"]: t for t in r.json["data"]["tasks"]}
    assert rows["t1"]["problem"] and rows["t2"]["problem"] is None and rows["t2"]["state"] == "INIT"


def test_corrupt_agent_status_is_a_problem_not_a_crash(repo: Path, cli) -> None:
    assert cli("start", "t1", "--agents", "a1").returncode == 0
    sp = repo.parent / "repo.tasks" / "t1" / "agents" / "a1" / "status.json"
    sp.write_text("{")
    r = cli("status", "--json")
    assert r.returncode == 0, r
    assert str(sp) in r.json["data"]["tasks"][0]["problem"]


def test_bad_session_id(repo: Path, cli) -> None:
    before = snapshot(repo)
    r = cli("start", "t1", "--session", "bad\nsession", "--json", session=None)
    assert r.returncode == 2, r
    assert snapshot(repo) == before


def test_commits_unaffected_by_refusals(repo: Path, cli) -> None:
    # A sanity check that the snapshot helper sees changes at all (so the equalities above can fail).
    before = snapshot(repo)
    commit(repo, {"new.txt": "x\n"}, "more")
    assert snapshot(repo) != before
    write(repo.parent / "repo.tasks" / "junk", "x")
    assert snapshot(repo)["tasks"] != before["tasks"]


def test_fast_branch_name_check_never_accepts_what_git_refuses(tmp_path: Path) -> None:
    from spark_git.core.gittypes import plainly_valid_branch as _plainly_valid_branch

    names = [
        "a", "t1", "task-t1-agent-a1", "work/t1", "work/t1--a", "a.b", "a_b", "a..b", "a.", "a.lock", "a.lock/b",
        "x/.hidden", ".a", "-a", "a/", "/a", "a//b", "a@{b", "@", "HEAD", "a b", "a~1", "a^", "a:b", "a?", "a*", "a[b",
        "a\\b", "A", "ü", "a\x01", "a/b.lock", "a/b.", "0", "9-", "a-", "a_", "x" * 200, "feat/ab/cd", "a.b.c",
    ]
    for name in names:
        git_ok = subprocess.run(["git", "check-ref-format", "--branch", name], cwd=tmp_path, capture_output=True).returncode == 0
        if _plainly_valid_branch(name):
            assert git_ok, name
    assert _plainly_valid_branch("task-t1-agent-a1") and _plainly_valid_branch("work/t1")


def test_git_missing_from_path_is_exit_2_not_a_traceback(repo: Path, cli, tmp_path: Path) -> None:
    before = snapshot(repo)
    empty = tmp_path / "nobin"
    empty.mkdir()
    env = {"PATH": str(empty), "GIT_PYTHON_GIT_EXECUTABLE": ""}
    for args in (["start", "t1", "--json"], ["status", "--json"]):
        r = cli(*args, env=env)
        assert r.returncode == 2, r
        no_traceback(r)
        assert r.json["summary"] == "git is not installed or not on PATH"
    assert snapshot(repo) == before
