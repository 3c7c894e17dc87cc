"""`spark-git complete`: refused for each unmet condition in turn (all listed, nothing changed), the
final gate, then main == one merge commit of the approved commit id, with the tree that passed."""

from __future__ import annotations

from pathlib import Path

from fixtures.repo import git, write

from tests.mergekit import PY, Task, config


def _task(tmp_path: Path, marker: Path) -> Task:
    final = [PY, "-c", f"import os, sys; print('final gate'); sys.exit(0 if os.path.exists({str(marker)!r}) else 5)"]
    t = Task(tmp_path, ["a1"], config(build=[PY, "-c", "pass"], final=final, non_interactive=True))
    t.commit("a1", {"feature.txt": "v1\n"}, "[a1] feature")
    assert t.merge("a1").returncode == 0
    return t


def _refused(t: Task, *needles: str) -> list[str]:
    main_before = git(t.repo, "rev-parse", "main")
    snap = t.snapshot(["a1"])
    r = t.spark("--json", "complete", "t1")
    assert r.returncode == 3, r
    unmet = r.json["data"]["unmet"]
    for n in needles:
        assert any(n in u for u in unmet), (n, unmet)
    assert len(unmet) == len(needles), unmet
    assert git(t.repo, "rev-parse", "main") == main_before and t.snapshot(["a1"]) == snap
    assert not (t.root.parent / "main" / "task.json").exists()  # the main lock taken for the call is released
    return unmet


def test_complete_refused_for_each_condition_then_lands(tmp_path: Path) -> None:
    marker = tmp_path / "repo.tasks" / "final-ok"  # where the gate box shows it (read-only)
    marker.parent.mkdir(parents=True, exist_ok=True)
    t = _task(tmp_path, marker)
    base = git(t.repo, "rev-parse", "main")

    # Several at once: all are listed, not just the first. An untracked file where the task adds
    # feature.txt is in the way (an unrelated untracked file is not: tests/test_dataloss.py).
    write(t.repo / "feature.txt", "mine\n")
    _refused(t, "has not approved", "would be overwritten: feature.txt")
    (t.repo / "feature.txt").unlink()

    # 1. no approval
    _refused(t, "has not approved")

    # 2. approval for an older commit: a later merge voids it
    assert t.spark("approve", "t1", "--changes").returncode == 0
    approved_old = t.head()
    t.commit("a1", {"feature.txt": "v2\n"}, "[a1] feature v2")
    assert t.merge("a1").returncode == 0
    _refused(t, f"approval is for {approved_old[:12]}")
    assert t.spark("approve", "t1", "--changes").returncode == 0

    # 3. dirty main worktree (main is checked out there)
    write(t.repo / "README.md", "edited on main\n")
    _refused(t, "not clean")
    git(t.repo, "checkout", "--", "README.md")

    # 5. the final gate fails: exit 1, main unchanged, log kept
    snap = t.snapshot(["a1"])
    r = t.spark("--json", "complete", "t1")
    assert r.returncode == 1, r
    assert "final gate" in Path(r.json["data"]["log_path"]).read_text()
    assert git(t.repo, "rev-parse", "main") == base
    def no_notes(refs: str) -> list[str]:  # the failed gate's evidence is a new note; nothing else moves
        return [ln for ln in refs.splitlines() if not ln.endswith(("refs/notes/spark", "refs/notes/spark-verdicts"))]

    assert t.task_json()["state"] != "COMPLETE" and no_notes(t.snapshot(["a1"])["refs"]) == no_notes(snap["refs"])

    # Everything holds: lands, main == the approved commit id, main worktree updated.
    marker.write_text("ok")
    approved = t.task_json()["checkpoint"]["commit_sha"]
    r = t.spark("--json", "complete", "t1")
    assert r.returncode == 0, r
    assert git(t.repo, "rev-parse", "main^2") == approved == t.head() and git(t.repo, "rev-parse", "main^1") == base
    assert git(t.repo, "rev-parse", "main") == r.json["data"]["new_base"] == r.json["data"]["landed_commit"]
    assert git(t.repo, "rev-parse", "main^{tree}") == git(t.repo, "rev-parse", f"{approved}^{{tree}}")  # the tree that passed
    assert (t.repo / "feature.txt").read_text() == "v2\n" and git(t.repo, "status", "--porcelain") == ""
    tj = t.task_json()
    assert tj["state"] == "COMPLETE" and tj["transition_log"][-1]["to"] == "COMPLETE"
    assert [n for n in t.notes(approved) if n["kind"] == "gate" and n["gate"] == "final"][-1]["passed"] is True
    assert t.audit()["events"][-1]["kind"] == "completed"
    assert not (t.root.parent / "main" / "task.json").exists()


def test_complete_blocked_by_another_sessions_main_lock(tmp_path: Path) -> None:
    marker = tmp_path / "repo.tasks" / "final-ok"  # where the gate box shows it (read-only)
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text("ok")
    t = _task(tmp_path, marker)
    assert t.spark("approve", "t1", "--changes").returncode == 0
    assert t.spark("lock", "main", session="other", env={}).returncode in (0,), "main lock by another session"
    base = git(t.repo, "rev-parse", "main")
    r = t.spark("--json", "complete", "t1")
    assert r.returncode == 3 and "owned by session other" in r.json["summary"], r
    assert git(t.repo, "rev-parse", "main") == base
    # the owner of the main lock may complete its own task while holding it
    assert t.spark("unlock", "main", session="other").returncode == 0
    assert t.spark("lock", "main").returncode == 0
    r = t.spark("--json", "complete", "t1")
    assert r.returncode == 0, r
    assert (t.root.parent / "main" / "task.json").exists()  # its own lock is left as it was


def test_complete_without_main_checked_out_moves_the_ref_by_cas(tmp_path: Path) -> None:
    marker = tmp_path / "repo.tasks" / "final-ok"  # where the gate box shows it (read-only)
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text("ok")
    t = _task(tmp_path, marker)
    git(t.repo, "checkout", "-q", "--detach")
    assert t.spark("approve", "t1", "--changes").returncode == 0
    r = t.spark("--json", "complete", "t1")
    assert r.returncode == 0, r
    assert git(t.repo, "rev-parse", "main^2") == t.head() and r.json["data"]["main_worktree_updated"] is False


def test_complete_killed_then_run_again(tmp_path: Path) -> None:
    marker = tmp_path / "repo.tasks" / "final-ok"  # where the gate box shows it (read-only)
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text("ok")
    t = _task(tmp_path, marker)
    assert t.spark("approve", "t1", "--changes").returncode == 0
    base, head = git(t.repo, "rev-parse", "main"), t.head()
    r = t.spark("--json", "complete", "t1", env={"SPARK_FAULT_KILL_AT": "gate-final-running"})
    assert r.returncode == -9 and git(t.repo, "rev-parse", "main") == base, r
    r = t.spark("--json", "complete", "t1", env={"SPARK_FAULT_KILL_AT": "complete-after-ff"})
    assert r.returncode == -9 and git(t.repo, "rev-parse", "main^2") == head, r  # landed, not yet recorded
    assert (t.root.parent / "main" / "task.json").exists()  # the dead process's main lock
    r = t.spark("--json", "complete", "t1")
    assert r.returncode == 0, r
    assert git(t.repo, "rev-parse", "main^2") == head and t.task_json()["state"] == "COMPLETE"
    assert not (t.root.parent / "main" / "task.json").exists()
    assert git(t.repo, "fsck", "--no-progress", "--no-dangling") == "" and git(t.repo, "status", "--porcelain") == ""
