"""`spark-git status`: state, owner, idle time, agents ahead/behind and dirty/clean, the main lock; from
any worktree or subdirectory; read-only."""

from __future__ import annotations

import re
from pathlib import Path

from fixtures.repo import commit, git, snapshot, write


def _setup(repo: Path, cli) -> dict[str, str]:
    assert cli("start", "t1", "--agents", "a1,a2").returncode == 0
    assert cli("start", "t2", session="s2").returncode == 0
    root = repo.parent / "repo.tasks" / "t1"
    base = git(repo, "rev-parse", "main")
    a1 = root / "agents" / "a1" / "code"
    commit(a1, {"a1.txt": "one\n"}, "[a1] first")
    a1_head = commit(a1, {"a1.txt": "two\n"}, "[a1] second")
    task_head = commit(root / "code", {"task.txt": "t\n"}, "task work")
    write(root / "agents" / "a2" / "code" / "scratch.txt", "wip\n")  # untracked: dirty
    return {"base": base, "a1": a1_head, "task": task_head}


def test_status_json_reports_agents_ahead_behind_and_dirty(repo: Path, cli) -> None:
    heads = _setup(repo, cli)
    root = repo.parent / "repo.tasks"
    before = snapshot(repo)
    r = cli("status", "--json")
    assert r.returncode == 0, r
    assert snapshot(repo) == before  # reads only
    d = r.json["data"]
    assert r.json["status"] == "OK" and d["tasks_root"] == str(root)
    assert d["main_lock"]["held"] is False
    t1, t2 = d["tasks"]
    assert (t1["task"], t2["task"]) == ("t1", "t2")
    assert t1["state"] == "INIT" and t1["session_id"] == "s1" and t1["provisioning"] == "done" and t1["problem"] is None
    assert re.fullmatch(r"idle \d+ (s|min)", t1["idle"]), t1["idle"]
    assert t1["task_branch"] == "t1" and t1["head"] == heads["task"] and t1["commits_beyond_base"] == 1
    assert t1["worktree"] == str(root / "t1" / "code") and t1["worktree_exists"] is True and t1["dirty"] == []
    a1, a2 = t1["agents"]
    assert a1 == {
        "name": "a1", "role": "other", "branch": "task-t1-agent-a1", "worktree": str(root / "t1" / "agents" / "a1" / "code"),
        "exists": True, "head": heads["a1"], "ahead": 2, "behind": 1, "dirty": [],
        "report": a1["report"], "flags": ["never reported"], "run": None,  # never run by `agent run`
    }
    assert a1["report"]["status"] == "NEW" and a1["report"]["agent"] == "a1"
    assert a2["head"] == heads["base"] and (a2["ahead"], a2["behind"]) == (0, 1)
    assert a2["dirty"] == ["?? scratch.txt"]
    assert t2["session_id"] == "s2" and t2["agents"] == [] and t2["commits_beyond_base"] == 0


def test_status_human_output(repo: Path, cli) -> None:
    _setup(repo, cli)
    assert cli("lock", "main", "--reason", "hotfix", session="s9").returncode == 0
    r = cli("status")
    assert r.returncode == 0, r
    out = r.stdout
    assert "main lock: held by s9" in out
    # one line per task by default; "never reported" counted, not repeated per agent
    assert re.search(r"t1\s+INIT\s+s1\s+\d+ (s|min)\s+2 \(1 unmerged, 1 dirty\)\s+-\s+2 never reported", out), out
    assert re.search(r"t2\s+INIT\s+s2\s+\d+ (s|min)\s+0\s+-\s+-", out), out
    assert "task-t1-agent-a1" not in out
    out = cli("status", "--agents").stdout  # the full picture
    assert re.search(r"t1\s+INIT\s+owner s1 \(idle \d+", out), out
    assert out.count("never reported") == 1 and "never reported: a1, a2" in out, out
    assert re.search(r"a1\s+task-t1-agent-a1\s+2\s+1\s+clean", out), out
    assert re.search(r"a2\s+task-t1-agent-a2\s+0\s+1\s+dirty", out), out
    assert re.search(r"t2\s+INIT\s+owner s2", out), out


def test_status_shows_main_lock_in_json(repo: Path, cli) -> None:
    assert cli("lock", "main", "--reason", "hotfix", session="s9").returncode == 0
    d = cli("status", "--json").json["data"]
    ml = d["main_lock"]
    assert ml["held"] is True and ml["session_id"] == "s9" and ml["reason"] == "hotfix"
    assert ml["path"] == str(repo.parent / "repo.tasks" / "main" / "task.json")
    assert d["tasks"] == []  # the main lock is not a task


def test_status_from_any_worktree_and_subdirectory(repo: Path, cli) -> None:
    _setup(repo, cli)
    root = repo.parent / "repo.tasks" / "t1"
    want = cli("status", "--json").json["data"]
    places = [
        repo / "src",
        root / "code",
        root / "code" / "src",
        root / "agents" / "a1" / "code",
        root / "agents" / "a2" / "code" / "src",
    ]
    for where in places:
        r = cli("status", "--json", cwd=where)
        assert r.returncode == 0, (where, r)
        got = r.json["data"]
        for t in got["tasks"] + want["tasks"]:
            t["idle"] = t["last_active_at"] = None  # time moves between the calls
        assert got == want, where
    # -C works the same way
    r = cli("-C", str(root / "agents" / "a1" / "code"), "status", "t1", "--json", cwd=repo.parent)
    assert r.returncode == 0 and [t["task"] for t in r.json["data"]["tasks"]] == ["t1"], r


def test_status_of_one_task_and_of_an_unknown_task(repo: Path, cli) -> None:
    _setup(repo, cli)
    r = cli("status", "t2", "--json")
    assert r.returncode == 0 and [t["task"] for t in r.json["data"]["tasks"]] == ["t2"], r
    r = cli("status", "nosuch", "--json")
    assert r.returncode == 2 and "no task 'nosuch'" in r.json["summary"], r
    r = cli("status", "Bad/Name", "--json")
    assert r.returncode == 2 and "bad task name" in r.json["summary"], r


def test_status_problem_rows_do_not_crash(repo: Path, cli) -> None:
    _setup(repo, cli)
    root = repo.parent / "repo.tasks"
    (root / "t2" / "task.json").write_bytes(b"\x00garbage")
    r = cli("status", "--json")
    assert r.returncode == 0, r
    rows = {t["task"]: t for t in r.json["data"]["tasks"]}
    assert str(root / "t2" / "task.json") in rows["t2"]["problem"] and rows["t1"]["problem"] is None
    # A worktree directory whose lock vanished is a problem too, not a crash.
    (root / "t2" / "task.json").unlink()
    r = cli("status", "--json")
    rows = {t["task"]: t for t in r.json["data"]["tasks"]}
    assert "without a lock" in rows["t2"]["problem"]
    r = cli("status")
    assert r.returncode == 0 and "without a lock" in r.stdout and "Traceback" not in r.stderr, r


def test_status_with_no_tasks(repo: Path, cli) -> None:
    r = cli("status", "--json")
    assert r.returncode == 0 and r.json["data"]["tasks"] == [] and r.json["summary"].startswith("0 tasks"), r
    assert not (repo.parent / "repo.tasks").exists()  # reading never creates the tasks root


def test_status_takes_no_index_lock(repo: Path, cli) -> None:
    # A supervisor's `status` must not make an agent's `git add` fail on index.lock: with the agent's
    # index stale (a touched file), status would normally refresh and rewrite it.
    assert cli("start", "t1", "--agents", "a1").returncode == 0
    wt = repo.parent / "repo.tasks" / "t1" / "agents" / "a1" / "code"
    index = Path(git(wt, "rev-parse", "--git-path", "index"))
    index = index if index.is_absolute() else wt / index
    before = index.read_bytes()
    (wt / "README.md").write_text("# demo\n")  # same content, new mtime: the index entry is stale
    r = cli("status", "--json")
    assert r.returncode == 0 and r.json["data"]["tasks"][0]["agents"][0]["dirty"] == [], r
    assert index.read_bytes() == before
