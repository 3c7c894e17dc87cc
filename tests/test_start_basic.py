from __future__ import annotations

import json
from pathlib import Path

from fixtures.repo import git


def test_start_creates_lock_branches_and_worktrees(repo: Path, cli) -> None:
    r = cli("start", "add-oauth", "--agents", "arch-reviewer,code-updater", "--json")
    assert r.returncode == 0, r
    env = r.json
    assert env["status"] == "OK" and env["task"] == "add-oauth"
    root = repo.parent / "repo.tasks" / "add-oauth"
    assert env["data"]["task_worktree"] == str(root / "code")
    lock = json.loads((root / "task.json").read_text())
    assert lock["session_id"] == "s1" and lock["state"] == "INIT" and lock["provisioning"] == "done"
    base = git(repo, "rev-parse", "main")
    assert lock["base_commit"] == base
    for b in ("add-oauth", "task-add-oauth-agent-arch-reviewer", "task-add-oauth-agent-code-updater"):
        assert git(repo, "rev-parse", b) == base
    wts = git(repo, "worktree", "list", "--porcelain")
    assert str(root / "agents" / "code-updater" / "code") in wts
    assert wts.count("worktree ") == 4


def test_start_again_by_owner_resumes_and_changes_nothing(repo: Path, cli) -> None:
    assert cli("start", "t1", "--agents", "a1").returncode == 0
    lock = (repo.parent / "repo.tasks" / "t1" / "task.json").read_bytes()
    r = cli("start", "t1", "--agents", "a1", "--json")
    assert r.returncode == 0 and r.json["data"]["resumed"] is True
    assert (repo.parent / "repo.tasks" / "t1" / "task.json").read_bytes() == lock


def test_start_by_other_session_is_blocked_naming_owner(repo: Path, cli) -> None:
    assert cli("start", "t1").returncode == 0
    r = cli("start", "t1", session="s2")
    assert r.returncode == 3
    assert "owned by session s1" in r.stderr and "idle" in r.stderr
