"""`spark-git cleanup`: refuses unless COMPLETE, never removes uncommitted work silently, archives
before removing, runs from inside the worktree it removes, and leaves only the audit files."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from fixtures.repo import commit, git, make_repo, spark, write

CONFIG = 'protocol = "light"\n[approval]\nallow_non_interactive = true\n'


@pytest.fixture
def lrepo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", {"README.md": "# demo\n"}, config=CONFIG)


def run(repo: Path, *args: str, cwd: Path | None = None):
    return spark(cwd or repo, *args, env={**os.environ, "SPARK_SESSION_ID": "s1"})


def ok(r):
    assert r.returncode == 0, r
    return r


def completed_task(repo: Path, t: str = "t1", agents: tuple[str, ...] = ("a1",)) -> Path:
    """A task whose agents each committed a file, merged, approved and landed on main. Returns the task dir."""
    ok(run(repo, "start", t, "--agents", ",".join(agents)))
    root = repo.parent / "repo.tasks" / t
    for a in agents:
        commit(root / "agents" / a / "code", {f"{t}-{a}.txt": f"{a}\n"}, f"[{a}] work")
        ok(run(repo, "merge", t, "--agent", a))
    ok(run(repo, "approve", t, "--changes"))
    ok(run(repo, "complete", t))
    return root


def snapshot(repo: Path) -> dict[str, object]:
    root = repo.parent / "repo.tasks"
    return {
        "refs": git(repo, "for-each-ref", "--format=%(objectname) %(refname)"),
        "worktrees": git(repo, "worktree", "list", "--porcelain"),
        "files": {str(p): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and "/.git" not in str(p)},
    }


def test_cleanup_of_completed_task_leaves_only_audit_files(lrepo: Path) -> None:
    root = completed_task(lrepo, agents=("a1", "a2"))
    r = ok(run(lrepo, "cleanup", "t1", "--json"))
    d = r.json["data"]
    assert d["final_state"] == "CLEANUP" and d["go_to"] is None
    assert sorted(d["deleted_branches"]) == ["t1", "task-t1-agent-a1", "task-t1-agent-a2"]
    assert d["kept_branches"] == [] and d["kept_paths"] == []
    assert git(lrepo, "worktree", "list", "--porcelain").count("worktree ") == 1
    assert git(lrepo, "branch", "--format=%(refname:short)") == "main"
    assert not (root / "task.json").exists() and not (root / "code").exists()
    assert not (root / "agents/a1/code").exists()
    trail = json.loads((root / "audit-trail.json").read_text())
    assert [t["to"] for t in trail["state_transitions"]][-1] == "CLEANUP"
    snap = json.loads((root / "audit-snapshot.json").read_text())
    assert snap["final_state"] == "CLEANUP" and snap["landed"] is True
    assert snap["commits_by_agent"] == {"a1": 1, "a2": 1} and snap["coordination_commits"] == 0 and snap["commits_total"] == 2
    assert snap["task_head"] == git(lrepo, "rev-parse", "main^2") and snap["task_json"]["state"] == "CLEANUP"
    assert snap["transitions_by_state"]["CLEANUP"] == 1 and snap["agents"] == ["a1", "a2"]
    for a in ("a1", "a2"):
        json.loads((root / "agents" / a / "status.json").read_text())
    # Again: nothing left to do, says so, exit 0.
    again = ok(run(lrepo, "cleanup", "t1", "--json"))
    assert again.json["data"]["already_done"] is True
    st = ok(run(lrepo, "status", "t1", "--json"))
    assert st.json["data"]["tasks"][0]["state"] == "ENDED"


def test_cleanup_refuses_a_task_that_is_not_complete_and_changes_nothing(lrepo: Path) -> None:
    ok(run(lrepo, "start", "t1", "--agents", "a1"))
    root = lrepo.parent / "repo.tasks" / "t1"
    commit(root / "agents/a1/code", {"x.txt": "x\n"}, "[a1] x")
    before = snapshot(lrepo)
    r = run(lrepo, "cleanup", "t1", "--json")
    assert r.returncode == 3 and r.json["status"] == "BLOCKED", r
    assert "not COMPLETE" in r.json["summary"] and r.json["data"]["state"] == "INIT"
    assert "spark-git abandon t1 --why 'not needed any more'" in r.json["next"]
    assert snapshot(lrepo) == before


def test_dirty_agent_worktree_is_refused_with_files_then_force_archives_it(lrepo: Path) -> None:
    root = completed_task(lrepo)
    wt = root / "agents/a1/code"
    head = git(wt, "rev-parse", "HEAD")
    write(wt / "notes/unsaved.txt", "precious\n")
    write(wt / "t1-a1.txt", "one, edited\n")
    before = snapshot(lrepo)
    r = run(lrepo, "cleanup", "t1", "--json")
    assert r.returncode == 3, r
    dirty = r.json["data"]["dirty"]
    assert sorted(dirty) == sorted([f"{wt}: ?? notes/unsaved.txt", f"{wt}:  M t1-a1.txt"]), dirty
    assert snapshot(lrepo) == before  # nothing removed, nothing written
    human = run(lrepo, "cleanup", "t1")
    assert human.returncode == 3 and "notes/unsaved.txt" in human.stderr and "--force" in human.stderr

    r = ok(run(lrepo, "cleanup", "t1", "--force", "--json"))
    (arch,) = [a for a in r.json["data"]["archived"] if "uncommitted" in a["ref"]]
    assert arch["ref"].startswith("refs/spark/archive/t1/uncommitted-a1/")
    assert sorted(arch["files"]) == [" M t1-a1.txt", "?? notes/unsaved.txt"]
    assert not wt.exists()
    # archive restore brings the same contents back.
    listed = ok(run(lrepo, "archive", "list", "--json")).json["data"]["entries"]
    assert arch["ref"] in [e["ref"] for e in listed]
    rs = ok(run(lrepo, "archive", "restore", arch["ref"], "--branch", "rescued", "--json"))
    assert rs.json["data"]["sha"] == git(lrepo, "rev-parse", "rescued") == arch["sha"]
    assert git(lrepo, "show", "rescued:notes/unsaved.txt") + "\n" == "precious\n"
    assert git(lrepo, "show", "rescued:t1-a1.txt") + "\n" == "one, edited\n"
    assert git(lrepo, "show", "rescued:README.md") + "\n" == "# demo\n"  # the rest of the worktree's state too
    assert git(lrepo, "rev-parse", "rescued^") == head  # parent: the worktree's HEAD
    assert git(lrepo, "diff", "--name-only", head, "rescued").split() == ["notes/unsaved.txt", "t1-a1.txt"]
    # Restoring onto an existing branch is refused and moves nothing.
    main = git(lrepo, "rev-parse", "main")
    again = run(lrepo, "archive", "restore", arch["ref"], "--branch", "main", "--json")
    assert again.returncode == 2 and "already exists" in again.json["summary"], again
    assert git(lrepo, "rev-parse", "main") == main


def test_detached_head_worktree_with_commits_is_archived_before_removal(lrepo: Path) -> None:
    root = completed_task(lrepo)
    wt = root / "agents/a1/code"
    git(wt, "checkout", "-q", "--detach")
    lost = commit(wt, {"experiment.txt": "try\n"}, "[a1] experiment on a detached HEAD")
    r = ok(run(lrepo, "cleanup", "t1", "--json"))
    refs = {a["ref"]: a["sha"] for a in r.json["data"]["archived"]}
    (ref,) = [k for k in refs if "/detached-a1/" in k]
    assert refs[ref] == lost and git(lrepo, "rev-parse", ref) == lost
    assert not wt.exists()
    assert git(lrepo, "cat-file", "-t", lost) == "commit"
    assert lost in git(lrepo, "rev-list", "--glob=refs/spark/archive/*").split()


def test_cleanup_from_inside_the_task_worktree_tells_where_to_go(lrepo: Path) -> None:
    root = completed_task(lrepo)
    inside = root / "code"
    r = ok(run(lrepo, "cleanup", "t1", "--json", cwd=inside))
    assert r.json["data"]["go_to"] == str(lrepo) and f"cd {lrepo}" in r.json["next"]
    assert not inside.exists()
    human_root = completed_task(lrepo, "t2")
    # an agent worktree is an agent's place: cleanup (the coordinator's) is refused there, saying where to go
    h = run(lrepo, "cleanup", "t2", cwd=human_root / "agents/a1/code")
    assert h.returncode == 3 and f"cd {lrepo}" in h.stderr, h
    h = ok(run(lrepo, "cleanup", "t2", cwd=human_root / "code"))
    assert f"cd {lrepo}" in h.stdout
    assert git(lrepo, "worktree", "list", "--porcelain").count("worktree ") == 1


def test_unmerged_agent_branch_is_archived_and_kept(lrepo: Path) -> None:
    root = completed_task(lrepo, agents=("a1", "a2"))
    wt = root / "agents/a1/code"
    late = commit(wt, {"late.txt": "late\n"}, "[a1] late work, never merged")
    r = ok(run(lrepo, "cleanup", "t1", "--json"))
    d = r.json["data"]
    assert d["kept_branches"] == ["task-t1-agent-a1"]
    assert git(lrepo, "rev-parse", "task-t1-agent-a1") == late
    (ref,) = [a["ref"] for a in d["archived"] if a["sha"] == late]
    assert ref == f"refs/spark/archive/t1/task-t1-agent-a1/{late[:12]}"
    assert "task-t1-agent-a2" in d["deleted_branches"] and "t1" in d["deleted_branches"]


def test_cleanup_by_another_session_is_blocked(lrepo: Path) -> None:
    completed_task(lrepo)
    before = snapshot(lrepo)
    r = spark(lrepo, "cleanup", "t1", "--json", env={**os.environ, "SPARK_SESSION_ID": "s2"})
    assert r.returncode == 3 and "owned by session s1" in r.json["summary"], r
    assert snapshot(lrepo) == before


def test_cleanup_refuses_when_the_task_branch_moved_past_main_after_complete(lrepo: Path) -> None:
    root = completed_task(lrepo)
    commit(root / "code", {"late.txt": "late\n"}, "a commit after complete, never landed")
    before = snapshot(lrepo)
    r = run(lrepo, "cleanup", "t1", "--json")
    assert r.returncode == 3, r
    assert any("not contained in main" in u for u in r.json["data"]["unmet"]) and "spark-git complete t1" in r.json["next"]
    assert snapshot(lrepo) == before


def test_cleanup_of_a_live_task_suggests_the_way_to_land_it(tmp_path: Path) -> None:
    """issue 14: the refusal suggested `complete` before `approve` (light), and in a state `complete`
    refuses (full). Now: the approval first, `complete` once approved; under full, the next step."""
    repo = make_repo(tmp_path / "repo", {"README.md": "# demo\n"}, config=CONFIG)
    ok(run(repo, "start", "t1", "--agents", "a1"))
    commit(repo.parent / "repo.tasks/t1/agents/a1/code", {"a.txt": "a\n"}, "[a1] a")
    ok(run(repo, "merge", "t1", "--agent", "a1"))
    r = run(repo, "--json", "cleanup", "t1")
    assert r.returncode == 3 and r.json["next"][0] == "spark-git approve t1 --changes", r.json
    ok(run(repo, "approve", "t1", "--changes"))
    assert run(repo, "--json", "cleanup", "t1").json["next"][0] == "spark-git complete t1"
    full = make_repo(tmp_path / "full", {"README.md": "# demo\n"})
    ok(run(full, "start", "t1", "--agents", "a1"))
    r = run(full, "--json", "cleanup", "t1")
    assert r.returncode == 3 and r.json["next"][0] == "spark-git advance t1", r.json
