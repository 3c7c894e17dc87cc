"""`spark-git abandon <task> --why`: stops a task at any state; nothing is deleted that an archive ref
does not keep."""

from __future__ import annotations

import json
import os
from pathlib import Path

from fixtures.repo import commit, git, spark, write


def run(repo: Path, *args: str, session: str = "s1"):
    return spark(repo, *args, env={**os.environ, "SPARK_SESSION_ID": session})


def state(repo: Path) -> dict[str, object]:
    root = repo.parent / "repo.tasks"
    return {
        "refs": git(repo, "for-each-ref", "--format=%(objectname) %(refname)"),
        "worktrees": git(repo, "worktree", "list", "--porcelain"),
        "files": {str(p): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and "/.git" not in str(p)},
    }


def test_abandon_mid_task_archives_every_commit_and_uncommitted_file(repo: Path) -> None:
    assert run(repo, "start", "t1", "--agents", "a1,a2").returncode == 0
    root = repo.parent / "repo.tasks" / "t1"
    c1 = commit(root / "agents/a1/code", {"a1.txt": "a1\n"}, "[a1] unmerged work")
    c2 = commit(root / "code", {"coord.txt": "c\n"}, "coordination commit on the task branch")
    write(root / "agents/a2/code/draft.txt", "draft, never committed\n")
    r = run(repo, "abandon", "t1", "--why", "requirements changed", "--json")
    assert r.returncode == 0, r
    d = r.json["data"]
    assert d["final_state"] == "ABANDONED" and d["why"] == "requirements changed"
    assert sorted(d["deleted_branches"]) == ["t1", "task-t1-agent-a1", "task-t1-agent-a2"]
    assert len(d["removed_worktrees"]) == 3 and git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
    archived = {a["ref"]: a["sha"] for a in d["archived"]}
    assert archived[f"refs/spark/archive/t1/task-t1-agent-a1/{c1[:12]}"] == c1
    assert archived[f"refs/spark/archive/t1/t1/{c2[:12]}"] == c2
    (wip,) = [a for a in d["archived"] if "/uncommitted-a2/" in a["ref"]]
    assert wip["files"] == ["?? draft.txt"]
    assert git(repo, "show", f"{wip['sha']}:draft.txt") + "\n" == "draft, never committed\n"
    reachable = set(git(repo, "rev-list", "--glob=refs/spark/archive/*").split())
    assert {c1, c2, wip["sha"]} <= reachable
    assert not (root / "task.json").exists()
    snap = json.loads((root / "audit-snapshot.json").read_text())
    assert snap["final_state"] == "ABANDONED" and snap["why"] == "requirements changed" and snap["landed"] is False
    events = json.loads((root / "audit-trail.json").read_text())["events"]
    assert any(e["kind"] == "abandoned" and e["why"] == "requirements changed" for e in events)
    # The archived branch comes back under its own name.
    rs = run(repo, "archive", "restore", f"refs/spark/archive/t1/task-t1-agent-a1/{c1[:12]}", "--json")
    assert rs.returncode == 0 and rs.json["data"]["branch"] == "task-t1-agent-a1", rs
    assert git(repo, "rev-parse", "task-t1-agent-a1") == c1


def test_abandon_untouched_task_removes_everything_and_archives_nothing(repo: Path) -> None:
    assert run(repo, "start", "t1", "--agents", "a1").returncode == 0
    r = run(repo, "abandon", "t1", "--why", "not needed", "--json")
    assert r.returncode == 0, r
    d = r.json["data"]
    assert d["archived"] == [] and sorted(d["deleted_branches"]) == ["t1", "task-t1-agent-a1"]
    assert git(repo, "for-each-ref", "refs/spark/archive/") == ""
    assert git(repo, "branch", "--format=%(refname:short)") == "main"
    # The name is free again.
    assert run(repo, "start", "t1", "--agents", "a1").returncode == 0


def test_abandon_refusals_change_nothing(repo: Path) -> None:
    assert run(repo, "start", "t1", "--agents", "a1").returncode == 0
    commit(repo.parent / "repo.tasks/t1/agents/a1/code", {"x": "x\n"}, "[a1] x")
    before = state(repo)
    empty = run(repo, "abandon", "t1", "--why", "  ", "--json")
    assert empty.returncode == 2 and "--why" in empty.json["summary"], empty
    other = run(repo, "abandon", "t1", "--why", "mine now", "--json", session="s2")
    assert other.returncode == 3 and "owned by session s1" in other.json["summary"], other
    missing = run(repo, "abandon", "nope", "--why", "x", "--json")
    assert missing.returncode == 2 and "no task 'nope'" in missing.json["summary"], missing
    assert state(repo) == before
