"""Many real `spark-git start` processes released at the same instant (fixtures.race: a pipe barrier)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixtures.race import run_together
from fixtures.repo import git


def branches(repo: Path) -> dict[str, str]:
    out = git(repo, "for-each-ref", "--format=%(refname:short) %(objectname)", "refs/heads/")
    return dict(line.split(" ") for line in out.splitlines())


def worktrees(repo: Path) -> list[dict[str, str]]:
    res = []
    for block in git(repo, "worktree", "list", "--porcelain").split("\n\n"):
        wt = {}
        for line in block.splitlines():
            k, _, v = line.partition(" ")
            wt[k] = v
        res.append(wt)
    return res


def files_under(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if ".git" not in p.parts and not _inside_worktree(p, root))


def _inside_worktree(p: Path, root: Path) -> bool:
    parts = p.relative_to(root).parts
    return "code" in parts[:-1]


@pytest.mark.slow
def test_twenty_racing_starts_of_one_task_exactly_one_wins(repo: Path) -> None:
    base = git(repo, "rev-parse", "main")
    jobs = [(["start", "same-task", "--agents", "a1,a2", "--json"], {"SPARK_SESSION_ID": f"racer-{i:02d}"}) for i in range(20)]
    results = run_together(repo, jobs)

    sessions = {id(r): extra["SPARK_SESSION_ID"] for r, (_args, extra) in zip(results, jobs, strict=True)}
    winners = [r for r in results if r.returncode == 0]
    losers = [r for r in results if r.returncode != 0]
    assert len(winners) == 1, "\n".join(map(str, results))
    assert sorted({r.returncode for r in losers}) == [3], "\n".join(map(str, losers))
    assert len(losers) == 19
    (win,) = winners
    owner = sessions[id(win)]
    assert win.json["data"]["session_id"] == owner and win.json["data"]["resumed"] is False
    for r in losers:
        assert "Traceback" not in r.stderr, r
        env = r.json
        assert env["status"] == "BLOCKED" and owner in env["summary"], r

    root = repo.parent / "repo.tasks"
    assert sorted(p.name for p in root.iterdir()) == ["same-task"]
    lock = json.loads((root / "same-task" / "task.json").read_text())
    assert lock["session_id"] == owner and lock["provisioning"] == "done" and lock["base_commit"] == base
    assert [t["to"] for t in lock["transition_log"]] == ["INIT"]
    trail = json.loads((root / "same-task" / "audit-trail.json").read_text())
    assert [t["to"] for t in trail["state_transitions"]] == ["INIT"]
    assert [e["kind"] for e in trail["events"]] == ["started"]

    assert branches(repo) == {
        "main": base, "same-task": base, "task-same-task-agent-a1": base, "task-same-task-agent-a2": base,
    }
    wts = worktrees(repo)
    assert sorted(w["worktree"] for w in wts) == sorted([
        str(repo),
        str(root / "same-task" / "code"),
        str(root / "same-task" / "agents" / "a1" / "code"),
        str(root / "same-task" / "agents" / "a2" / "code"),
    ])
    assert all("locked" not in w and "prunable" not in w for w in wts), wts
    # No temp files or other leftovers of the losers.
    assert files_under(root) == [
        "same-task", "same-task/agents", "same-task/agents/a1", "same-task/agents/a1/code", "same-task/agents/a1/status.json",
        "same-task/agents/a2", "same-task/agents/a2/code", "same-task/agents/a2/status.json",
        "same-task/audit-trail.json", "same-task/code", "same-task/task.json",
    ]
    assert git(repo, "status", "--porcelain") == ""


@pytest.mark.slow
def test_eight_tasks_with_three_agents_start_at_once(repo: Path) -> None:
    base = git(repo, "rev-parse", "main")
    tasks = [f"task-{i}" for i in range(8)]
    jobs = [(["start", t, "--agents", "x,y,z", "--json"], {"SPARK_SESSION_ID": f"s-{t}"}) for t in tasks]
    results = run_together(repo, jobs)
    for r in results:
        assert r.returncode == 0, r
        assert "lock" not in r.stderr.lower(), r  # nothing from git's own lock files (index.lock, config.lock...)

    root = repo.parent / "repo.tasks"
    expected = [str(repo)]
    for t in tasks:
        expected.append(str(root / t / "code"))
        expected += [str(root / t / "agents" / a / "code") for a in ("x", "y", "z")]
    wts = worktrees(repo)
    assert sorted(w["worktree"] for w in wts) == sorted(expected)
    assert len(wts) == 33  # 8 x (task + 3 agents) + main
    assert all("locked" not in w and "prunable" not in w and w["HEAD"] == base for w in wts), wts
    want = {"main": base}
    for t in tasks:
        want[t] = base
        want.update({f"task-{t}-agent-{a}": base for a in ("x", "y", "z")})
    assert branches(repo) == want
    for t in tasks:
        lock = json.loads((root / t / "task.json").read_text())
        assert lock["session_id"] == f"s-{t}" and lock["provisioning"] == "done" and sorted(lock["agents"]) == ["x", "y", "z"]
        assert git(root / t / "agents" / "y" / "code", "symbolic-ref", "--short", "HEAD") == f"task-{t}-agent-y"
        assert git(root / t / "code", "status", "--porcelain") == ""
