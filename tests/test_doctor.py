"""`spark-git doctor` on a repo with 50 tasks, 10 of them broken in 10 different ways, reports exactly
those 10; `--fix` repairs what needs no judgement (losing nothing) and leaves the judgement cases
with the command a human runs; `lock break` is logged."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from fixtures.repo import git, make_repo, spark, write

N_TASKS = 50

# task -> (what is broken, the finding kind doctor must report, fixed by --fix without judgement)
BROKEN: dict[str, tuple[str, str, bool]] = {
    "t03": ("agent worktree directory deleted", "worktree-dir-gone", True),
    "t07": ("agent status.json corrupt", "status-corrupt", True),
    "t11": ("stale index.lock of the task worktree", "git-lock-stale", True),
    "t15": ("agent worktree on a detached HEAD with a new commit", "wrong-branch", True),
    "t19": ("task.json corrupt", "task-json-corrupt", False),
    "t23": ("task.json deleted, worktrees left", "worktree-without-lock", False),
    "t27": ("state disagrees with transition_log", "state-vs-log", True),
    "t31": ("merge left in progress in the task worktree", "merge-in-progress", True),
    "t35": ("last_merge_sha not an ancestor of the task branch", "last-merge-not-in-task-branch", False),
    "t39": ("agent branch without worktree, not in task.json", "stray-agent-branch", True),
}


def build_fleet(root: Path, env: dict[str, str]) -> Path:
    """A repo with N_TASKS tasks of one agent each, then BROKEN applied."""
    repo = make_repo(root / "repo", {"README.md": "# fleet\n"}, config='protocol = "light"\n')
    for name in (f"t{i:02d}" for i in range(N_TASKS)):
        r = spark(repo, "start", name, "--agents", "a1", env={**env, "SPARK_SESSION_ID": "s1"})
        assert r.returncode == 0, r
    break_tasks(repo, env)
    return repo


def break_tasks(repo: Path, env: dict[str, str]) -> None:
    tr = repo.parent / "repo.tasks"

    def tj(t: str) -> dict:
        return json.loads((tr / t / "task.json").read_text())

    def put(t: str, d: dict) -> None:
        (tr / t / "task.json").write_text(json.dumps(d))

    def g(where: Path, *args: str) -> str:
        return git(where, *args, env=env)

    import shutil

    shutil.rmtree(tr / "t03/agents/a1/code")
    (tr / "t07/agents/a1/status.json").write_text('{"agent": "a1", "task": ')
    admin = Path(g(tr / "t11/code", "rev-parse", "--absolute-git-dir"))
    (admin / "index.lock").write_text("")
    wt = tr / "t15/agents/a1/code"
    g(wt, "checkout", "-q", "--detach")
    write(wt / "exp.txt", "experiment\n")
    g(wt, "add", "exp.txt")
    g(wt, "commit", "-q", "-m", "[a1] experiment on a detached HEAD")
    (tr / "t19/task.json").write_bytes(b"\x00garbage")
    (tr / "t23/task.json").unlink()
    d = tj("t27")
    d["state"] = "REVIEW"
    put("t27", d)
    wt = tr / "t31/code"
    g(wt, "switch", "-q", "-c", "side-t31")
    write(wt / "side.txt", "side\n")
    g(wt, "add", "side.txt")
    g(wt, "commit", "-q", "-m", "side work")
    g(wt, "switch", "-q", "t31")
    g(wt, "merge", "--no-ff", "--no-commit", "side-t31")
    side = g(repo, "rev-parse", "side-t31")  # work that is not on t35's branch, not even as an equivalent patch
    d = tj("t35")
    d["agents"]["a1"]["last_merge_sha"] = side
    put("t35", d)
    # what a killed `agent add` leaves: a branch spark-git created (its reflog says so), no worktree
    g(repo, "update-ref", "-m", "spark-git start: create task-t39-agent-zz", "refs/heads/task-t39-agent-zz", "main")


def doctor(repo: Path, *args: str, session: str | None = None):
    e = {k: v for k, v in os.environ.items() if k != "SPARK_SESSION_ID"}
    if session:
        e["SPARK_SESSION_ID"] = session
    return spark(repo, "doctor", *args, "--json", env=e)


def broken_by_task(findings: list[dict]) -> dict[str, set[str]]:
    res: dict[str, set[str]] = {}
    for f in findings:
        if f["broken"] and not f["fixed"]:
            res.setdefault(f["where"].split("/")[0], set()).add(f["kind"])
    return res


def test_doctor_reports_exactly_the_ten_broken_tasks_and_fixes_what_needs_no_judgement(tmp_path: Path) -> None:
    env = dict(os.environ)
    repo = build_fleet(tmp_path, env)
    tr = repo.parent / "repo.tasks"
    detached = git(tr / "t15/agents/a1/code", "rev-parse", "HEAD")

    healthy = doctor(repo, "t00")
    assert healthy.returncode == 0 and healthy.json["data"]["findings"] == [], healthy

    r = doctor(repo)
    assert r.returncode == 1, r
    d = r.json["data"]
    assert d["tasks_checked"] == N_TASKS
    assert broken_by_task(d["findings"]) == {t: {kind} for t, (_, kind, _) in BROKEN.items()}, d["findings"]
    for f in d["findings"]:
        assert f["repair"], f  # every finding says how to repair it

    fixed = doctor(repo, "--fix")
    assert fixed.returncode == 1, fixed  # the judgement cases remain
    left = broken_by_task(fixed.json["data"]["findings"])
    assert left == {t: {kind} for t, (_, kind, auto) in BROKEN.items() if not auto}, fixed.json
    repairs = {f["where"]: f["repair"] for f in fixed.json["data"]["findings"] if f["broken"] and not f["fixed"]}
    assert repairs["t19"].startswith("spark-git lock break t19 --why") and repairs["t23"].startswith("spark-git lock break t23 --why")
    # What --fix did, it did without losing anything.
    assert git(tr / "t03/agents/a1/code", "rev-parse", "--abbrev-ref", "HEAD") == "task-t03-agent-a1"
    assert git(tr / "t15/agents/a1/code", "rev-parse", "--abbrev-ref", "HEAD") == "task-t15-agent-a1"
    assert detached in git(repo, "rev-list", "--glob=refs/spark/archive/t15/*").split()
    assert json.loads((tr / "t07/agents/a1/status.json").read_text())["agent"] == "a1"
    (aside,) = (tr / "t07/agents/a1").glob("status.json.corrupt-*")
    assert aside.read_text() == '{"agent": "a1", "task": '
    assert json.loads((tr / "t27/task.json").read_text())["state"] == "INIT"
    assert not (tr / "t31/code/.git").is_dir() and git(tr / "t31/code", "status", "--porcelain") == ""
    assert git(repo, "rev-parse", "side-t31")  # the merged-in branch is untouched
    assert git(repo, "branch", "--list", "task-t39-agent-zz") == ""
    assert not list(repo.joinpath(".git/worktrees").glob("*/index.lock"))

    # The judgement cases: a human breaks the locks (logged); the rebuilt locks are sound.
    for t in ("t19", "t23"):
        b = spark(repo, "lock", "break", t, "--why", "owner's session crashed", "--json", env={**env, "SPARK_SESSION_ID": "human"})
        assert b.returncode == 0 and b.json["data"]["rebuilt"] is True, b
        assert json.loads((tr / t / "task.json").read_text())["session_id"] == "human"
        events = json.loads((tr / t / "audit-trail.json").read_text())["events"]
        assert any(e["kind"] == "lock_broken" and e["why"] == "owner's session crashed" for e in events)
    assert (tr / "t19").glob("task.json.corrupt-*")
    last = doctor(repo)
    assert broken_by_task(last.json["data"]["findings"]) == {"t35": {"last-merge-not-in-task-branch"}}, last.json


def test_lock_break_of_a_live_lock_hands_it_over_and_is_logged(repo: Path) -> None:
    e = {**os.environ, "SPARK_SESSION_ID": "s1"}
    assert spark(repo, "start", "t1", "--agents", "a1", env=e).returncode == 0
    tr = repo.parent / "repo.tasks"
    before = (tr / "t1/task.json").read_bytes()
    nowhy = spark(repo, "lock", "break", "t1", "--why", "", "--json", env={**e, "SPARK_SESSION_ID": "s2"})
    assert nowhy.returncode == 2 and (tr / "t1/task.json").read_bytes() == before, nowhy
    r = spark(repo, "lock", "break", "t1", "--why", "s1 is gone", "--json", env={**e, "SPARK_SESSION_ID": "s2"})
    assert r.returncode == 0, r
    assert r.json["data"]["previous_owner"] == "s1" and r.json["data"]["new_owner"] == "s2"
    assert json.loads((tr / "t1/task.json").read_text())["session_id"] == "s2"
    head = git(repo, "rev-parse", "t1")
    assert r.json["data"]["noted_on"] == head
    note = git(repo, "notes", "--ref=refs/notes/spark", "show", head)
    assert any(json.loads(ln).get("kind") == "lock_break" and json.loads(ln)["why"] == "s1 is gone" for ln in note.splitlines())
    # The old owner is now blocked; the new one can abandon.
    old = spark(repo, "abandon", "t1", "--why", "x", "--json", env=e)
    assert old.returncode == 3 and "owned by session s2" in old.json["summary"]
    assert spark(repo, "abandon", "t1", "--why", "x", env={**e, "SPARK_SESSION_ID": "s2"}).returncode == 0


def test_doctor_reports_idle_lock_of_another_session_as_a_note(repo: Path) -> None:
    e = {**os.environ, "SPARK_SESSION_ID": "s1"}
    assert spark(repo, "start", "t1", env=e).returncode == 0
    lock = repo.parent / "repo.tasks/t1/task.json"
    d = json.loads(lock.read_text())
    d["last_active_at"] = "2026-01-01T00:00:00.000000Z"
    lock.write_text(json.dumps(d))
    r = doctor(repo, session="s2")
    assert r.returncode == 0, r  # an idle lock is not broken: only a human decides
    (f,) = r.json["data"]["findings"]
    assert f["kind"] == "lock-idle" and "owned by session s1, idle" in f["problem"] and f["repair"].startswith("spark-git lock break t1 --why")
    mine = doctor(repo, session="s1")
    assert mine.json["data"]["findings"] == []
    # Any mutating command of the owner refreshes last_active_at: the lock is no longer idle.
    assert spark(repo, "agent", "add", "t1", "a9", "--why", "more hands", env=e).returncode == 0
    assert json.loads(lock.read_text())["last_active_at"] > "2026-01-01T00:00:00.000000Z"
    assert doctor(repo, session="s2").json["data"]["findings"] == []


def test_git_lock_files_are_stale_only_when_no_git_runs_and_spark_mutexes_are_never_touched(repo: Path) -> None:
    e = {**os.environ, "SPARK_SESSION_ID": "s1"}
    assert spark(repo, "start", "t1", "--agents", "a1", env=e).returncode == 0
    common = repo / ".git"
    mutexes = {p: p.read_bytes() for p in (common / "spark").glob("*.lock")}
    assert mutexes  # start took the task and worktrees mutexes
    stale = [common / "index.lock", common / "refs/heads/t1.lock"]
    for p in stale:
        p.write_text("")
    # A git process standing in the repo (waiting on stdin): its lock files may be live.
    busy = subprocess.Popen(["git", "cat-file", "--batch"], cwd=repo, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        r = doctor(repo, "--fix")
        assert r.returncode == 0, r  # a busy lock is a note, not a problem
        assert {f["kind"] for f in r.json["data"]["findings"]} == {"git-lock-busy"}
        assert all(p.exists() for p in stale)
    finally:
        busy.communicate(b"")
    r = doctor(repo)
    assert r.returncode == 1 and {f["kind"] for f in r.json["data"]["findings"]} == {"git-lock-stale"}, r
    r = doctor(repo, "--fix")
    assert r.returncode == 0 and r.json["data"]["fixed"] == 2, r
    assert not any(p.exists() for p in stale)
    assert {p: p.read_bytes() for p in (common / "spark").glob("*.lock")} == mutexes
    assert doctor(repo).json["data"]["findings"] == []


def test_doctor_of_an_unknown_task_is_bad_input(repo: Path) -> None:
    r = doctor(repo, "nope")
    assert r.returncode == 2 and "no task 'nope'" in r.json["summary"], r
    r = doctor(repo, "Bad/Name")
    assert r.returncode == 2 and "bad task name" in r.json["summary"], r
