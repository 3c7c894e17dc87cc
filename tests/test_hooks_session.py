"""`spark-git hook session-start`: after a compaction, the session learns which tasks it owns, what
each waits for (plan approval; change approval of commit X), where the worktrees are, what to run."""

from __future__ import annotations

import json
from pathlib import Path

from fixtures.repo import make_repo, sealed_env, spark

from tests.hookutil import event, hook, run_cli
from tests.protokit import P


def _event(repo: Path, session: str) -> dict:
    return {"session_id": session, "cwd": str(repo), "hook_event_name": "SessionStart", "source": "compact", "transcript_path": "/tmp/t.jsonl"}


def test_session_start_reports_what_each_owned_task_waits_for(tmp_path: Path) -> None:
    p = P(tmp_path, title="Usage docs")
    a = "docs-updater"
    p.ok("classify", p.task, "--files", "docs/usage.md")
    p.go(), p.go()
    for x in ("architecture-reviewer", a):  # LOW: 003's mandatory reviewer and the updater
        p.requirements(x)
        p.report(x)
    p.go()
    p.plans(["architecture-reviewer", a])
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


def test_identity_follows_the_session_not_the_cwd(tmp_path: Path) -> None:
    """SessionStart records where the session started; a coordinator that `cd`s into an agent
    worktree is still the coordinator, an agent that `cd`s out is still the agent (real processes)."""
    repo = make_repo(tmp_path / "repo")
    env = sealed_env(tmp_path / "home", SPARK_SESSION_ID="s1")
    assert spark(repo, "start", "t1", "--agents", "a1,a2", env=env).returncode == 0
    a1 = tmp_path / "repo.tasks" / "t1" / "agents" / "a1" / "code"
    hook_env = {k: v for k, v in env.items() if k != "SPARK_SESSION_ID"}
    for sid, launch in (("coord-1", repo), ("agent-1", a1)):
        r = spark(launch, "hook", "session-start", input=json.dumps({"session_id": sid, "cwd": str(launch), "hook_event_name": "SessionStart"}), env=hook_env, process=True)
        assert r.returncode == 0, r
    # a later start of the same session from elsewhere (resume after a cd) does not move the record
    spark(a1, "hook", "session-start", input=json.dumps({"session_id": "coord-1", "cwd": str(a1)}), env=hook_env, process=True)
    assert hook(event(a1, "Write", session="coord-1", file_path="x.py"), hook_env).returncode == 2
    assert hook(event(a1, "Bash", session="coord-1", command="echo x > x.py"), hook_env).returncode == 2
    assert hook(event(a1, "Write", session="agent-1", file_path="x.py"), hook_env).returncode == 0
    r = hook(event(tmp_path / "repo.tasks" / "t1" / "code", "Write", session="agent-1", file_path="NOTES.md"), hook_env)
    assert r.returncode == 2 and "agent a1" in r.stderr, r
    # without a record: CLAUDE_PROJECT_DIR, then cwd
    assert hook(event(a1, "Write", session="new", file_path="x.py"), {**hook_env, "CLAUDE_PROJECT_DIR": str(repo)}).returncode == 2
    assert hook(event(a1, "Write", session="new", file_path="x.py"), hook_env).returncode == 0


def test_a_crash_inside_a_repo_with_live_tasks_blocks(tmp_path: Path, monkeypatch, capsys) -> None:
    import io
    import sys

    from spark_git.clients import hooks
    from spark_git.guard import policy

    repo = make_repo(tmp_path / "repo")
    assert spark(repo, "start", "t1", env=sealed_env(tmp_path / "home", SPARK_SESSION_ID="s1")).returncode == 0
    other = make_repo(tmp_path / "other")

    def boom(call, protect):
        raise RuntimeError("kaboom")

    monkeypatch.setattr(policy, "decide", boom)
    # outside a live repo the call proceeds with a warning (exit 0: exit 1 would block under onFailure: block)
    for cwd, code in ((repo, 2), (other, 0)):
        monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(event(cwd, "Write", file_path="x.py"))))
        assert hooks.main(["pre-tool-use"]) == code
        said = capsys.readouterr()
        told = said.err if code == 2 else said.out  # a block on stderr; the warning of an allowed call in the transcript
        assert "kaboom" in told and (told.startswith("spark-git: blocked:") == (code == 2)), said
