"""A `merge` killed with SIGKILL at several points: no commit unreachable (every agent commit is on a
branch or under refs/spark/archive/), the task branch is the old or the new head, the next merge works."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures.repo import git

from tests.mergekit import Task, config, reachable_from_refs

GATE = ["true"]  # the kill points, not the gate, are under test


def _setup(tmp_path: Path, conflict: bool = False) -> tuple[Task, list[str], str]:
    t = Task(tmp_path, ["a1", "a2"], config(build=GATE))
    t.commit("a1", {"src/app.py": "line1\nA1\nline3\n"}, "[a1] edit")
    assert t.merge("a1").returncode == 0  # the task branch moved: a2's merge must rebase
    mine = [
        t.commit("a2", {"two.txt": "2\n"}, "two (no prefix: will be stamped)"),
        t.commit("a2", {"src/app.py": "line1\nA2\nline3\n"} if conflict else {"three.txt": "3\n"}, "[a2] three"),
    ]
    return t, mine, t.head()


def _check_invariants(t: Task, mine: list[str], old: str, new_ok: bool) -> None:
    fsck = git(t.repo, "fsck", "--no-progress", "--no-dangling")
    assert fsck == "", fsck
    for sha in mine:
        assert reachable_from_refs(t.repo, sha), f"{sha} unreachable"
    head = t.head()
    if head != old:
        assert new_ok, "task branch moved at a point before the fast-forward"
        assert git(t.repo, "rev-parse", f"{head}~2") == old  # exactly a2's two commits on top


@pytest.mark.parametrize("point", [
    "merge-rebase-returned", "merge-after-rebase", "merge-after-stamp", "gate-build-running", "merge-before-ff", "merge-after-ff",
])
def test_sigkill_during_merge_then_recovery(tmp_path: Path, point: str) -> None:
    t, mine, old = _setup(tmp_path)
    r = t.merge("a2", env={"SPARK_FAULT_KILL_AT": point})
    assert r.returncode == -9, r
    _check_invariants(t, mine, old, new_ok=point == "merge-after-ff")
    if point == "merge-after-ff":
        assert t.head() != old  # it landed; the notes of that run are what was lost
    r = t.merge("a2")
    assert r.returncode == 0, r
    if point == "merge-after-ff":  # the killed run's landing is recorded by the next merge
        assert any("killed merge landed" in x for x in r.json["data"]["recovered"]), r
    head = t.head()
    assert git(t.repo, "rev-parse", f"{head}~2") == old and t.head("a2") == head
    assert git(t.repo, "show", f"{head}:three.txt") == "3" and git(t.repo, "show", f"{head}:two.txt") == "2"
    subjects = git(t.repo, "log", "--format=%s", f"{old}..{head}").splitlines()
    assert subjects == ["[a2] three", "[a2] two (no prefix: will be stamped)"]
    assert git(t.wt("a2"), "status", "--porcelain") == "" and git(t.wt(), "status", "--porcelain") == ""
    _check_invariants(t, mine, old, new_ok=True)
    who = t.spark("--json", "who", "t1").json["data"]
    assert {w["agent"]: len(w["commits"]) for w in who["agents"]} == {"a1": 1, "a2": 2}
    sources = {c["sha"]: c["agent_source"] for c in t.spark("--json", "log", "t1").json["data"]["commits"]}
    assert set(sources.values()) == {"note"}  # every landed commit has its attribution note
    trail = t.audit()
    assert sorted(c["sha"] for c in trail["commits"]) == sorted(git(t.repo, "rev-list", f"{git(t.repo, 'rev-parse', 'main')}..{head}").split())
    assert t.task_json()["agents"]["a2"]["last_merge_sha"] == head


def test_sigkill_with_a_conflicting_rebase_in_progress(tmp_path: Path) -> None:
    t, mine, old = _setup(tmp_path, conflict=True)
    a2_before = t.head("a2")
    r = t.merge("a2", env={"SPARK_FAULT_KILL_AT": "merge-rebase-returned"})
    assert r.returncode == -9, r
    assert git(t.wt("a2"), "status").find("rebase") >= 0  # left mid-rebase by the dead process
    _check_invariants(t, mine, old, new_ok=False)
    # The next merge aborts the dead merge's rebase, restores a2 exactly, and reports the conflict.
    r = t.merge("a2")
    assert r.returncode == 3 and r.json["data"]["conflicts"] == ["src/app.py"], r
    assert t.head("a2") == a2_before and t.head() == old
    assert git(t.wt("a2"), "status", "--porcelain") == ""
    assert not (t.root / "agents/a2/.spark-merge-rebase").exists()
