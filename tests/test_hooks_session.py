"""`spark-git hook session-start`: after a compaction, the session learns which tasks it owns, what
each waits for (plan approval; change approval of commit X), where the worktrees are, what to run."""

from __future__ import annotations

import json
from pathlib import Path

from fixtures.repo import make_repo

from tests.hookutil import hook, run_cli
from tests.protokit import P


def _event(repo: Path, session: str) -> dict:
    return {"session_id": session, "cwd": str(repo), "hook_event_name": "SessionStart", "source": "compact", "transcript_path": "/tmp/t.jsonl"}


def test_session_start_reports_what_each_owned_task_waits_for(tmp_path: Path) -> None:
    p = P(tmp_path, title="Usage docs")
    a = "docs-updater"
    p.ok("classify", p.task, "--files", "docs/usage.md")
    p.go(), p.go()
    p.requirements(a)
    p.report(a)
    p.go()
    p.plans([a])
    assert p.state() == "SYNTHESIS"
    r = hook(_event(p.repo, "s1"), sub="session-start")
    assert r.returncode == 0, r
    assert "task t1 (Usage docs): state SYNTHESIS" in r.stdout
    assert "waiting for: plan approval" in r.stdout
    assert f"task worktree: {p.wt()}" in r.stdout and f"agent {a}: {p.wt(a)}" in r.stdout
    assert f"next: cd {p.wt()} ; spark-git status t1" in r.stdout

    p.ok("approve", p.task, "--plan")
    p.commit(a, {"docs/usage.md": "# usage\n"}, "usage docs")
    p.ok("merge", p.task, "--agent", a)
    p.report(a, "COMPLETE", "--work-remaining", "none")
    assert p.go()["to"] == "AWAITING_USER_APPROVAL"
    head = p.head()
    r = run_cli(p.repo, "hook", "session-start", "--json", session=None, input=json.dumps(_event(p.repo, "s1")))
    assert r.returncode == 0, r
    (t,) = r.json["data"]["tasks"]
    assert t["state"] == "AWAITING_USER_APPROVAL" and t["head"] == head
    assert t["waiting_for"].startswith(f"change approval of commit {head}")
    assert "spark-git complete t1" in t["next"]
    p.ok("approve", p.task, "--changes")
    r = hook(_event(p.repo, "s1"), sub="session-start")
    assert "waiting for: nothing from the human" in r.stdout

    # another session owns nothing here: silence (nothing added to the model's context)
    r = hook(_event(p.repo, "someone-else"), sub="session-start")
    assert (r.returncode, r.stdout) == (0, "")


def test_session_start_outside_spark_repos_says_nothing(tmp_path: Path) -> None:
    plain = make_repo(tmp_path / "plain")
    for cwd in (plain, tmp_path):
        r = hook(_event(cwd, "s1"), sub="session-start")
        assert (r.returncode, r.stdout, r.stderr) == (0, "", ""), r
