from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

from fixtures.repo import commit, git, snapshot


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


# -- extended: names from titles, sessions, output, base, abandon of an untouched task ----------

def _today() -> str:
    return f"{datetime.now(UTC):%Y%m%d}"


def test_title_derives_a_dated_name_and_counts_up_on_collision(repo: Path, cli) -> None:
    day = _today()
    r = cli("start", "--title", "Add OAuth2 support", "--json")
    assert r.returncode == 0, r
    day = day if r.json["task"].endswith(day) else _today()  # the date may have turned meanwhile
    first = f"add-oauth2-support-{day}"
    assert r.json["task"] == first
    lock = json.loads((repo.parent / "repo.tasks" / first / "task.json").read_text())
    assert lock["title"] == "Add OAuth2 support" and lock["task_name"] == first
    r = cli("start", "--title", "Add OAuth2 support", "--json", session="s2")
    assert r.returncode == 0 and r.json["task"] == f"{first}-2", r
    git(repo, "branch", f"{first}-3")  # a branch of that name counts as taken too
    r = cli("start", "--title", "Add OAuth2 support", "--json", session="s3")
    assert r.returncode == 0 and r.json["task"] == f"{first}-4", r
    r = cli("start", "--title", "  A very long title, with punctuation!!! that goes on and on  ", "--json")
    assert r.returncode == 0, r
    slug = r.json["task"].rsplit("-", 1)[0]
    assert slug == "a-very-long-title-with-punctua" and len(slug) <= 30
    r = cli("start", "--json")
    assert r.returncode == 2 and "--title" in r.json["summary"], r


def test_without_a_session_the_terminals_own_is_used_and_the_next_command_needs_no_export(repo: Path, cli) -> None:
    """The README's quick start pasted into a fresh shell: no SPARK_SESSION_ID anywhere (issue 33)."""
    r = cli("start", "t1", "--agents", "a", "--json", session=None)
    assert r.returncode == 0, r
    s = r.json["data"]["session_id"]
    assert re.fullmatch(r"human:[^@\s]+@[^:\s]+(:\S+)?", s) and r.json["data"]["session_minted"] is True
    assert not [n for n in r.json["next"] if n.startswith("export ")]
    assert json.loads((repo.parent / "repo.tasks" / "t1" / "task.json").read_text())["session_id"] == s
    r = cli("advance", "t1", "--json", session=None)  # owned by this terminal: not refused for its session
    assert "owned by session" not in r.json["summary"], r
    r = cli("start", "t3", "--session", "explicit", "--json", session="from-env")
    assert r.json["data"]["session_id"] == "explicit" and r.json["data"]["session_minted"] is False


def test_human_output_shows_task_worktree_first(repo: Path, cli) -> None:
    r = cli("start", "t1", "--agents", "a1,a2")
    assert r.returncode == 0, r
    lines = r.stdout.splitlines()
    root = repo.parent / "repo.tasks" / "t1"
    assert lines[0].startswith("✓ task t1 started with 2 agent(s)")
    assert lines[1].split() == ["task", "worktree", str(root / "code")]
    assert str(root / "agents" / "a1" / "code") in lines[2] and str(root / "agents" / "a2" / "code") in lines[3]
    assert f"cd {root / 'code'}" in r.stdout
    assert r.stderr == ""  # no progress noise when stderr is not a terminal


def test_base_option(repo: Path, cli) -> None:
    old = git(repo, "rev-parse", "main")
    commit(repo, {"later.txt": "x\n"}, "later")
    r = cli("start", "t1", "--agents", "a1", "--base", old, "--json")
    assert r.returncode == 0 and r.json["data"]["base_commit"] == old, r
    assert git(repo, "rev-parse", "t1") == old == git(repo, "rev-parse", "task-t1-agent-a1")


def test_agents_are_deduplicated_and_blank_entries_ignored(repo: Path, cli) -> None:
    r = cli("start", "t1", "--agents", "b, a,,b ,a", "--json")
    assert r.returncode == 0, r
    assert [w["agent"] for w in r.json["data"]["worktrees"]] == [None, "b", "a"]


def test_version_and_help(repo: Path, cli) -> None:
    for args in (["--version"], ["-V"]):
        r = cli(*args)
        assert r.returncode == 0 and re.fullmatch(r"spark-git \d+\.\d+\.\d+\n", r.stdout), r
    for cmd in (["start"], ["status"], ["agent", "add"], ["lock", "main"], ["unlock", "main"], ["abandon"]):
        r = cli(*cmd, "--help")
        assert r.returncode == 0 and "Usage: spark-git " + " ".join(cmd) in r.stdout, r


def test_abandon_untouched_task_removes_everything_but_the_audit_trail(repo: Path, cli) -> None:
    before = snapshot(repo)
    assert cli("start", "t1", "--agents", "a1,a2").returncode == 0
    root = repo.parent / "repo.tasks" / "t1"
    mid = snapshot(repo)
    r = cli("abandon", "t1", "--why", "not needed", "--json", session="s2")  # not the owner
    assert r.returncode == 3 and "owned by session s1" in r.json["summary"], r
    assert snapshot(repo) == mid
    r = cli("abandon", "t1", "--why", "not needed", "--json")
    assert r.returncode == 0, r
    after = snapshot(repo)
    assert after["refs"] == before["refs"]  # branches gone, and nothing archived: there was no work
    assert after["worktrees"] == before["worktrees"]
    assert after["status"] == before["status"]
    assert not (root / "task.json").exists() and not (root / "code").exists() and not (root / "agents" / "a1" / "code").exists()
    trail = json.loads((root / "audit-trail.json").read_text())
    ev = trail["events"][-1]
    assert ev["kind"] == "abandoned" and ev["why"] == "not needed"
    (row,) = cli("status", "--all", "--json").json["data"]["tasks"]
    assert row["task"] == "t1" and row["state"] == "ENDED" and row["problem"] is None
    d = cli("status", "--json").json["data"]  # ended tasks only with --all
    assert d["tasks"] == [] and d["ended_hidden"] == ["t1"]
    # The name can be used again.
    r = cli("start", "t1", "--agents", "a1", "--json", session="s3")
    assert r.returncode == 0 and r.json["data"]["session_id"] == "s3", r


def test_post_checkout_hook_runs_in_every_new_worktree_as_with_git_worktree_add(repo: Path, cli, tmp_path: Path) -> None:
    log = tmp_path / "hook.log"
    hook = repo / ".git" / "hooks" / "post-checkout"
    hook.write_text(f'#!/bin/sh\necho "$PWD $1 $2 $3 $(test -f README.md && echo checked-out)" >> {log}\n')
    hook.chmod(0o755)
    base = git(repo, "rev-parse", "main")
    git(repo, "worktree", "add", "-q", str(tmp_path / "plain"), "-b", "plain")  # what plain git does
    assert log.read_text() == f"{tmp_path / 'plain'} {'0' * 40} {base} 1 checked-out\n"
    log.unlink()
    assert cli("start", "t1", "--agents", "a1,a2").returncode == 0
    root = repo.parent / "repo.tasks" / "t1"
    lines = sorted(log.read_text().splitlines())
    assert lines == sorted(f"{p} {'0' * 40} {base} 1 checked-out" for p in (root / "code", root / "agents" / "a1" / "code", root / "agents" / "a2" / "code"))
    assert "locked" not in git(repo, "worktree", "list", "--porcelain")


def test_failing_post_checkout_hook_fails_start_and_leaves_nothing(repo: Path, cli) -> None:
    hook = repo / ".git" / "hooks" / "post-checkout"
    hook.write_text("#!/bin/sh\necho 'hook says no' >&2\nexit 1\n")
    hook.chmod(0o755)
    before = snapshot(repo)
    r = cli("start", "t1", "--agents", "a1", "--json")
    assert r.returncode == 1 and "hook says no" in r.json["summary"], r  # git's stderr kept
    after = snapshot(repo)
    assert after["refs"] == before["refs"] and after["worktrees"] == before["worktrees"]
    assert not (repo.parent / "repo.tasks" / "t1" / "task.json").exists()
