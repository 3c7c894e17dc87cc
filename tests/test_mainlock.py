"""`spark-git lock main` / `unlock main`: ownership, idempotence for the owner, `--force --why` logged."""

from __future__ import annotations

import json
from pathlib import Path

from fixtures.race import run_together
from fixtures.repo import git


def _paths(repo: Path) -> tuple[Path, Path]:
    d = repo.parent / "repo.tasks" / "main"
    return d / "task.json", d / "audit-trail.json"


def _events(trail: Path) -> list[dict]:
    return json.loads(trail.read_text())["events"]


def test_lock_and_unlock_by_owner(repo: Path, cli) -> None:
    lock, trail = _paths(repo)
    r = cli("lock", "main", "--reason", "hotfix on main", "--json")
    assert r.returncode == 0, r
    d = r.json["data"]
    assert d["held"] is True and d["session_id"] == "s1" and d["reason"] == "hotfix on main" and d["path"] == str(lock)
    on_disk = json.loads(lock.read_text())
    assert on_disk["session_id"] == "s1" and on_disk["reason"] == "hotfix on main"
    # Taking it again is idempotent for the owner.
    r = cli("lock", "main", "--json")
    assert r.returncode == 0 and r.json["data"]["session_id"] == "s1", r
    assert json.loads(lock.read_text())["created_at"] == on_disk["created_at"]
    r = cli("unlock", "main", "--json")
    assert r.returncode == 0 and r.json["data"]["held"] is False, r
    assert "was held by s1" in r.json["summary"]
    assert not lock.exists()
    kinds = [(e["kind"], e["session_id"]) for e in _events(trail)]
    assert kinds == [("main_locked", "s1"), ("main_unlocked", "s1")]
    assert _events(trail)[1]["forced"] is False
    # Unlocking a free lock is fine and says so.
    r = cli("unlock", "main", "--json")
    assert r.returncode == 0 and "not locked" in r.json["summary"], r


def test_other_session_is_blocked_and_changes_nothing(repo: Path, cli) -> None:
    lock, trail = _paths(repo)
    assert cli("lock", "main").returncode == 0
    before = (lock.read_bytes(), trail.read_bytes())
    for args in (["lock", "main"], ["unlock", "main"]):
        r = cli(*args, "--json", session="s2")
        assert r.returncode == 3, r
        assert r.json["status"] == "BLOCKED" and "owned by session s1" in r.json["summary"] and "idle" in r.json["summary"]
        assert r.json["data"]["owner"] == "s1"
    r = cli("unlock", "main", "--json", session=None)  # no session at all: blocked, with a hint naming the owner
    assert r.returncode == 3 and "--session s1" in r.json["data"]["hint"], r
    assert (lock.read_bytes(), trail.read_bytes()) == before


def test_force_needs_why_and_is_logged(repo: Path, cli) -> None:
    lock, trail = _paths(repo)
    assert cli("lock", "main").returncode == 0
    before = lock.read_bytes()
    r = cli("unlock", "main", "--force", "--json", session="s2")
    assert r.returncode == 2 and "--why" in r.json["summary"], r
    r = cli("unlock", "main", "--force", "--why", "  ", "--json", session="s2")
    assert r.returncode == 2, r
    r = cli("unlock", "main", "--why", "no force", "--json", session="s2")
    assert r.returncode == 2 and "--force" in r.json["summary"], r
    assert lock.read_bytes() == before
    r = cli("unlock", "main", "--force", "--why", "s1 crashed an hour ago", "--json", session="s2")
    assert r.returncode == 0, r
    assert r.json["data"]["forced_by"] == "s2" and r.json["data"]["why"] == "s1 crashed an hour ago"
    assert not lock.exists()
    ev = _events(trail)[-1]
    assert ev["kind"] == "main_unlocked" and ev["session_id"] == "s2" and ev["owner"] == "s1"
    assert ev["forced"] is True and ev["why"] == "s1 crashed an hour ago"
    # Now anyone may take it.
    assert cli("lock", "main", session="s3").returncode == 0


def test_lock_without_session_takes_this_terminals(repo: Path, cli) -> None:
    lock, _ = _paths(repo)
    r = cli("lock", "main", "--json", session=None)
    assert r.returncode == 0, r
    s = r.json["data"]["session_id"]
    assert s.startswith("human:") and r.json["next"] == ["spark-git unlock main"]
    assert cli("unlock", "main", "--json", session=None).returncode == 0  # the same session: no export needed
    assert cli("lock", "main", "--json", session=None).returncode == 0
    assert json.loads(lock.read_text())["session_id"] == s


def test_corrupt_main_lock(repo: Path, cli) -> None:
    lock, trail = _paths(repo)
    lock.parent.mkdir(parents=True)
    lock.write_bytes(b"{oops")
    for args in (["lock", "main"], ["unlock", "main"]):
        r = cli(*args, "--json")
        assert r.returncode == 3 and r.json["data"]["path"] == str(lock), r
    assert lock.read_bytes() == b"{oops"
    r = cli("status", "--json")
    assert r.returncode == 0 and "corrupt" in r.json["data"]["main_lock"]["reason"], r
    # A human can still break it, logged.
    r = cli("unlock", "main", "--force", "--why", "garbage lock file", "--json", session="s2")
    assert r.returncode == 0, r
    assert not lock.exists()
    ev = _events(trail)[-1]
    assert ev["kind"] == "main_unlocked" and ev["forced"] is True and ev["owner"] is None and "corrupt" in ev["problem"]


def test_racing_lock_main_exactly_one_wins(repo: Path) -> None:
    lock, _ = _paths(repo)
    results = run_together(repo, [(["lock", "main", "--json"], {"SPARK_SESSION_ID": f"m{i}"}) for i in range(8)])
    wins = [r for r in results if r.returncode == 0]
    assert len(wins) == 1, "\n".join(map(str, results))
    assert sorted(r.returncode for r in results) == [0] + [3] * 7, "\n".join(map(str, results))
    assert json.loads(lock.read_text())["session_id"] == f"m{results.index(wins[0])}"
    assert git(repo, "status", "--porcelain") == ""


def test_hold_takes_releases_and_takes_over_its_own(repo: Path, cli) -> None:
    """mainlock.hold (what `complete` runs under): held for the operation, released after, also on
    error; a lock left by a killed run of the same session and reason is taken over and released."""
    import pytest

    from spark_git.core.errors import Blocked
    from spark_git.core.layout import Layout
    from spark_git.ops.shared import mainlock
    from spark_git.state.backends import open_store
    from spark_git.state.models import MainLock

    lock, _ = _paths(repo)
    store = open_store(Layout.discover(repo))
    with mainlock.hold(store, "s1", "spark-git complete t1", task="t1"):
        assert json.loads(lock.read_text())["reason"] == "spark-git complete t1"
    assert not lock.exists()
    with pytest.raises(RuntimeError), mainlock.hold(store, "s1", "spark-git complete t1"):
        raise RuntimeError("the operation failed")
    assert not lock.exists()
    store.create_main_lock(MainLock(session_id="s1", reason="spark-git complete t1", pid=1))  # a killed run's
    with mainlock.hold(store, "s1", "spark-git complete t1"):
        pass
    assert not lock.exists()
    # A lock this session took with `lock main` is used and kept; another session's refuses.
    assert cli("lock", "main").returncode == 0
    with mainlock.hold(store, "s1", "spark-git complete t1"):
        pass
    assert json.loads(lock.read_text())["session_id"] == "s1"
    with pytest.raises(Blocked, match="owned by session s1"), mainlock.hold(store, "s2", "spark-git complete t1", task="t1"):
        pass
    assert lock.exists()
