"""`spark-git agent add`: a worktree + branch from the current task head, recorded with its why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixtures.repo import commit, git, snapshot


@pytest.fixture
def task(repo: Path, cli) -> Path:
    assert cli("start", "t1", "--agents", "a1").returncode == 0
    return repo.parent / "repo.tasks" / "t1"


def test_agent_add_from_current_task_head(repo: Path, cli, task: Path) -> None:
    base = git(repo, "rev-parse", "main")
    head = commit(task / "code", {"plan.md": "plan\n"}, "task work")
    assert head != base
    r = cli("agent", "add", "t1", "test-reviewer", "--why", "needs a second pair of eyes", "--json")
    assert r.returncode == 0, r
    wt = task / "agents" / "test-reviewer" / "code"
    data = {k: v for k, v in r.json["data"].items() if k != "provisioning"}  # worktree setup: another issue's field
    assert data == {
        "task": "t1", "agent": "test-reviewer", "branch": "task-t1-agent-test-reviewer", "worktree": str(wt),
        "role": "reviewer", "state": "INIT", "from_commit": head,
    }
    assert git(repo, "rev-parse", "task-t1-agent-test-reviewer") == head
    assert git(wt, "symbolic-ref", "--short", "HEAD") == "task-t1-agent-test-reviewer"
    assert git(wt, "status", "--porcelain") == "" and (wt / "plan.md").read_text() == "plan\n"
    tf = json.loads((task / "task.json").read_text())
    assert sorted(tf["agents"]) == ["a1", "test-reviewer"]
    assert tf["agents"]["test-reviewer"]["worktree"] == str(wt) and tf["agents"]["test-reviewer"]["role"] == "reviewer"
    assert tf["required_agents"] == ["a1", "test-reviewer"]  # joined before IMPLEMENTATION: a stakeholder
    (add,) = tf["agent_additions"]
    assert add["agent"] == "test-reviewer" and add["state"] == "INIT" and add["why"] == "needs a second pair of eyes" and add["at"]
    assert json.loads((task / "agents" / "test-reviewer" / "status.json").read_text())["status"] == "NEW"
    trail = json.loads((task / "audit-trail.json").read_text())
    ev = trail["events"][-1]
    assert ev["kind"] == "agent_added" and ev["agent"] == "test-reviewer" and ev["from_commit"] == head
    # status sees the new agent level with the task branch; the first agent one commit behind.
    rows = {a["name"]: a for a in cli("status", "t1", "--json").json["data"]["tasks"][0]["agents"]}
    assert (rows["test-reviewer"]["ahead"], rows["test-reviewer"]["behind"]) == (0, 0)
    assert (rows["a1"]["ahead"], rows["a1"]["behind"]) == (0, 1)


def test_role_option(repo: Path, cli, task: Path) -> None:
    r = cli("agent", "add", "t1", "helper", "--why", "w", "--role", "updater", "--json")
    assert r.returncode == 0 and r.json["data"]["role"] == "updater", r
    r = cli("agent", "add", "t1", "helper2", "--why", "w", "--role", "boss", "--json")
    assert r.returncode == 2 and "bad role" in r.json["summary"], r


def _refused(repo: Path, cli, task: Path, *args: str, code: int, session: str = "s1") -> dict:
    before = snapshot(repo)
    lock = (task / "task.json").read_bytes()
    r = cli("agent", "add", *args, "--json", session=session)
    assert r.returncode == code, r
    assert snapshot(repo) == before
    assert (task / "task.json").read_bytes() == lock
    return r.json


def test_other_session_is_blocked(repo: Path, cli, task: Path) -> None:
    env = _refused(repo, cli, task, "t1", "a2", "--why", "w", code=3, session="s2")
    assert env["status"] == "BLOCKED" and "owned by session s1" in env["summary"]


def test_duplicate_agent(repo: Path, cli, task: Path) -> None:
    env = _refused(repo, cli, task, "t1", "a1", "--why", "again", code=2)
    assert "already part of task" in env["summary"]


@pytest.mark.parametrize("name", ["Bad", "a/b", "a..b", "x.lock", "a b", "z" * 64, "ctl\x01"])
def test_bad_agent_name(repo: Path, cli, task: Path, name: str) -> None:
    env = _refused(repo, cli, task, "t1", name, "--why", "w", code=2)
    assert "bad agent name" in env["summary"]


def test_empty_why_unknown_task_and_taken_branch(repo: Path, cli, task: Path) -> None:
    assert "--why" in _refused(repo, cli, task, "t1", "a2", "--why", "  ", code=2)["summary"]
    assert "no task 'nope'" in _refused(repo, cli, task, "nope", "a2", "--why", "w", code=2)["summary"]
    git(repo, "branch", "task-t1-agent-a3")
    assert "already exists" in _refused(repo, cli, task, "t1", "a3", "--why", "w", code=2)["summary"]
    r = cli("agent", "add", "t1", "a2")  # --why is required
    assert r.returncode == 2 and "--why" in r.stderr, r


def test_directory_in_the_way_is_refused_and_undone(repo: Path, cli, task: Path) -> None:
    in_the_way = task / "agents" / "a2" / "code"
    in_the_way.mkdir(parents=True)
    (in_the_way / "keep.txt").write_text("someone's file\n")
    env = _refused(repo, cli, task, "t1", "a2", "--why", "w", code=3)
    assert str(in_the_way) in env["summary"]
    assert git(repo, "branch", "--list", "task-t1-agent-a2") == ""  # the branch it made was removed
    assert (in_the_way / "keep.txt").read_text() == "someone's file\n"
